import dataclasses

import pytest

from gateway.domain import Rollout, RolloutStage
from gateway.routing.rollout import RolloutStageFilter, request_draw

from .factories import FAST, STANDARD, candidate, request

SHADOW = dataclasses.replace(FAST, rollout=Rollout(RolloutStage.SHADOW))
CANARY = dataclasses.replace(FAST, rollout=Rollout(RolloutStage.CANARY, (("chat", 0.25), ("coding", 1.0))))

CASES = [
    # (request overrides, candidate, kept)
    ({}, candidate(STANDARD), True),
    ({}, candidate(FAST), True),
    ({"draw": 0.99}, candidate(FAST), True),
    ({}, candidate(SHADOW), False),
    ({"task": "coding"}, candidate(SHADOW), False),
    ({"pinned_variant": "fast"}, candidate(SHADOW), True),
    ({"draw": 0.0}, candidate(CANARY), True),
    ({"draw": 0.2499}, candidate(CANARY), True),
    ({"draw": 0.25}, candidate(CANARY), False),
    ({"draw": 0.9}, candidate(CANARY), False),
    ({"draw": 0.9, "pinned_variant": "fast"}, candidate(CANARY), True),
    ({"draw": 0.9999, "task": "coding"}, candidate(CANARY), True),
    ({"draw": 0.0, "task": "reasoning"}, candidate(CANARY), False),  # not listed: share 0
]


@pytest.mark.parametrize(("overrides", "cand", "kept"), CASES)
def test_rollout_stage_verdicts(overrides, cand, kept):
    result, reason = RolloutStageFilter().keep(request(**overrides), cand)
    assert result is kept
    assert reason


def test_share_by_stage():
    assert Rollout().share("chat") == 1.0
    assert Rollout(RolloutStage.SHADOW).share("chat") == 0.0
    assert CANARY.rollout.share("chat") == 0.25 and CANARY.rollout.share("agent") == 0.0


def test_the_draw_is_deterministic_uniform_and_independent_per_purpose():
    ids = [f"req-{i}" for i in range(4000)]
    draws = [request_draw(i) for i in ids]
    assert draws == [request_draw(i) for i in ids]
    assert all(0.0 <= d < 1.0 for d in draws)
    # Uniform: each tenth holds 400 +- 5 standard deviations (sd = sqrt(4000 * 0.1 * 0.9) = 19).
    counts = [sum(1 for d in draws if k / 10 <= d < (k + 1) / 10) for k in range(10)]
    assert all(abs(c - 400) < 95 for c in counts), counts
    # Another purpose's draw is not the canary's: under 25% on both about 1/16 of the time.
    other = [request_draw(i, b"shadow") for i in ids]
    both = sum(1 for a, b in zip(draws, other, strict=True) if a < 0.25 and b < 0.25)
    assert abs(both - 250) < 5 * (4000 * 0.0625 * 0.9375) ** 0.5
