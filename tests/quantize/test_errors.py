"""quantize's error tree: one root, so the command shell can catch what quantize refuses."""

from __future__ import annotations

import pytest

from quantize.errors import BuildError, ParityError, QuantizeError, RecipeError, SuiteError


@pytest.mark.parametrize("error", [RecipeError, BuildError, SuiteError, ParityError])
def test_every_error_has_the_one_root(error: type[Exception]) -> None:
    assert issubclass(error, QuantizeError)
