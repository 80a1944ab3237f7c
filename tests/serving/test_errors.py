"""serving's error tree: one root the command shell can catch, and a profile error that names where."""

from __future__ import annotations

import pytest

from serving.errors import LaunchProfileError, LocalModelError, ReplicaFailed, ServingError, SupervisorError


@pytest.mark.parametrize("error", [LaunchProfileError, LocalModelError, ReplicaFailed, SupervisorError])
def test_every_error_has_the_one_root(error: type[Exception]) -> None:
    assert issubclass(error, ServingError)


def test_a_launch_profile_error_names_its_path_when_it_has_one() -> None:
    error = LaunchProfileError("fast-int4.yaml: engine_args", "unknown key")
    assert (str(error), error.path, error.message) == ("fast-int4.yaml: engine_args: unknown key",
                                                       "fast-int4.yaml: engine_args", "unknown key")
    assert str(LaunchProfileError("", "unknown cpu variant 'turbo'")) == "unknown cpu variant 'turbo'"
