"""Written after the held-out set's first reading: chat that sounds like reasoning, and word problems
asked the way chat is. What keeps them apart in the data is whether there is anything to compute."""

from __future__ import annotations

import random

import pytest

from gateway.detect.training.templates import chat_or_reasoning
from gateway.detect.training.templates.prose import TRAINING, VALIDATION

# Every template of the module, by the task its name says: the module's rule holds for any added later.
TEMPLATES = [f for name, f in vars(chat_or_reasoning).items() if name.startswith(("chat_", "reason_")) and callable(f)]
CHAT_LIKE_REASONING = [t for t in TEMPLATES if t.__name__.startswith("chat_")]
REASONING_LIKE_CHAT = [t for t in TEMPLATES if t.__name__.startswith("reason_")]


@pytest.mark.parametrize("template", CHAT_LIKE_REASONING, ids=lambda t: t.__name__)
def test_chat_that_asks_for_an_estimate_or_a_what_if_has_no_figures_to_compute_with(template):
    for seed in range(40):
        text = template(random.Random(f"s{seed}"))[-1]["content"]
        assert not any(ch.isdigit() for ch in text), text


@pytest.mark.parametrize("template", REASONING_LIKE_CHAT, ids=lambda t: t.__name__)
def test_a_word_problem_asked_as_chat_has_its_figures(template):
    for seed in range(40):
        text = template(random.Random(f"s{seed}"))[-1]["content"]
        assert sum(ch.isdigit() for ch in text) >= 3, text


def test_each_new_shape_has_training_and_validation_templates():
    trained = {t.__name__ for c in TRAINING.values() for t in c}
    tuned = {t.__name__ for c in VALIDATION.values() for t in c}
    assert {"chat_estimate", "chat_what_if", "chat_common_sense", "reason_everyday"} <= trained
    assert {"chat_ballpark", "chat_wonder", "reason_household"} <= tuned
