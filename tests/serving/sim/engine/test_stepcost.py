"""Step durations and draft acceptance."""

from __future__ import annotations

import random
import statistics

import pytest

from serving.sim.engine.stepcost import BatchShape, accepted_drafts, expected_tokens_per_step, step_duration
from serving.sim.profile import Speculation, StepCost, TaskAcceptance

COST = StepCost(base_s=0.01, prefill_s_per_token=0.001, decode_s_per_token=0.002, kv_read_s_per_token=0.0001)
SPEC = Speculation("ngram", 4, {"default": TaskAcceptance(0.5)}, draft_s_per_step=0.003, draft_s_per_seq=0.0005)


def test_step_duration_adds_each_term() -> None:
    assert step_duration(COST, None, BatchShape(100, 10, 1000, 0)) == pytest.approx(0.01 + 0.1 + 0.02 + 0.1)
    assert step_duration(COST, SPEC, BatchShape(0, 10, 0, 2)) == pytest.approx(0.01 + 0.02 + 0.003 + 0.001)
    assert step_duration(COST, SPEC, BatchShape(0, 1, 0, 0)) == pytest.approx(0.012)  # no drafts, no draft cost


@pytest.mark.parametrize("acceptance", [0.3, 0.7, 0.9])
def test_accepted_drafts_are_geometric(acceptance: float) -> None:
    rng = random.Random(0)
    mean = statistics.mean(accepted_drafts(rng, acceptance, 4) for _ in range(20000))
    assert mean + 1 == pytest.approx(expected_tokens_per_step(acceptance, 4), rel=0.03)


def test_acceptance_edges() -> None:
    rng = random.Random(0)
    assert accepted_drafts(rng, 0.0, 4) == 0 and accepted_drafts(rng, 1.0, 4) == 4 and accepted_drafts(rng, 0.5, 0) == 0
