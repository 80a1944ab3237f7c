"""The synthesised templates: each a function of its seed, ending with the turn a request ends with."""

from __future__ import annotations

import random

import pytest

from gateway.detect.training.templates.synth import TEMPLATES

ALL = [t for chosen in TEMPLATES.values() for t in chosen]


@pytest.mark.parametrize("template", ALL, ids=lambda t: t.__name__)
def test_a_template_is_a_function_of_its_seed_and_ends_with_a_user_or_tool_turn(template):
    for seed in range(10):
        messages = template(random.Random(f"s{seed}"))
        assert messages == template(random.Random(f"s{seed}"))
        assert messages[-1]["role"] in ("user", "tool", "function")
