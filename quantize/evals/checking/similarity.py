"""A cheap similarity for open answers: token-set F1 over lowercased words (as SQuAD scores
spans), in [0, 1]."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")


def token_set_f1(answer: str, reference: str) -> float:
    """F1 of the two answers' word sets; 1.0 when both are empty, 0.0 when one is."""
    got, want = set(_WORD.findall(answer.lower())), set(_WORD.findall(reference.lower()))
    if not got and not want:
        return 1.0
    common = len(got & want)
    if common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)
