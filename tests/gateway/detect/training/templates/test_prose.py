"""The prose templates: deterministic per seed, and asked in prose (no code in the turn the
detector reads first)."""

from __future__ import annotations

import random

import pytest

from gateway.detect.features import _has_code
from gateway.detect.training.templates.prose import TRAINING, VALIDATION

TEMPLATES = [t for chosen in (*TRAINING.values(), *VALIDATION.values()) for t in chosen]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.__name__)
def test_a_template_is_a_function_of_its_seed_and_ends_with_a_user_turn_in_prose(template):
    for seed in range(20):
        messages = template(random.Random(f"s{seed}"))
        assert messages == template(random.Random(f"s{seed}"))
        assert messages[-1]["role"] == "user" and messages[-1]["content"].strip()
        assert not _has_code(messages[-1]["content"])


def test_training_and_validation_templates_are_distinct():
    assert not {t.__name__ for c in TRAINING.values() for t in c} & {t.__name__ for c in VALIDATION.values() for t in c}
