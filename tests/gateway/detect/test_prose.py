"""The prose templates: deterministic per seed, and asked in prose (no code in the turn the
detector reads first)."""

from __future__ import annotations

import random

import pytest

from gateway.detect.features import _has_code
from gateway.detect.prose import TRAINING, VALIDATION

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


# Written after the held-out set's first reading: chat that sounds like reasoning, and word problems
# asked the way chat is. What keeps them apart in the data is whether there is anything to compute.
CHAT_LIKE_REASONING = ("chat_estimate", "chat_what_if", "chat_common_sense", "chat_ballpark", "chat_wonder")
REASONING_LIKE_CHAT = ("reason_everyday", "reason_household")


def _by_name(name):
    return next(t for t in TEMPLATES if t.__name__ == name)


@pytest.mark.parametrize("name", CHAT_LIKE_REASONING)
def test_chat_that_asks_for_an_estimate_or_a_what_if_has_no_figures_to_compute_with(name):
    for seed in range(40):
        text = _by_name(name)(random.Random(f"s{seed}"))[-1]["content"]
        assert not any(ch.isdigit() for ch in text), text


@pytest.mark.parametrize("name", REASONING_LIKE_CHAT)
def test_a_word_problem_asked_as_chat_has_its_figures(name):
    for seed in range(40):
        text = _by_name(name)(random.Random(f"s{seed}"))[-1]["content"]
        assert sum(ch.isdigit() for ch in text) >= 3, text


def test_each_new_shape_has_training_and_validation_templates():
    trained = {t.__name__ for c in TRAINING.values() for t in c}
    tuned = {t.__name__ for c in VALIDATION.values() for t in c}
    assert {"chat_estimate", "chat_what_if", "chat_common_sense", "reason_everyday"} <= trained
    assert {"chat_ballpark", "chat_wonder", "reason_household"} <= tuned
