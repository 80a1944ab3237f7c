"""The betting test: its error bound holds however often it is looked at, and it concludes when
the design says it will."""

from __future__ import annotations

import math
import random

import pytest

from gateway.parity.sequential import Conclusion, Design, TestState


def run(design: Design, losses: list[float]) -> TestState:
    state = TestState()
    for loss in losses:
        state = state.add(design, loss)
    return state


def pairs(p_loss: float, p_win: float, n: int, rng: random.Random) -> list[float]:
    """Paired losses: 1 with p_loss (standard right, candidate wrong), -1 with p_win, else 0."""
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(1.0 if u < p_loss else -1.0 if u < p_loss + p_win else 0.0)
    return out


def test_a_candidate_losing_every_pair_is_revoked_at_the_designed_pair():
    design = Design(tolerance=0.05, alpha=0.05, bet=0.5)
    for clean in (0, 10, 40):
        n = design.pairs_to_revoke(clean)
        lam = 0.5 / 1.05
        expected = math.ceil((math.log(20) - clean * math.log(1 - lam * 0.05)) / math.log(1 + lam * 0.95))
        assert n == expected
        assert run(design, [0.0] * clean + [1.0] * (n - 1)).conclusion is Conclusion.UNDECIDED
        assert run(design, [0.0] * clean + [1.0] * n).conclusion is Conclusion.LOSS


def test_a_candidate_that_never_loses_concludes_parity_at_the_designed_pair():
    design = Design(tolerance=0.05, alpha=0.05, bet=0.9)
    n = design.pairs_to_open()
    assert n == math.ceil(math.log(20) / math.log(1 + 0.9 / 0.95 * 0.05))
    assert run(design, [0.0] * (n - 1)).conclusion is Conclusion.UNDECIDED
    assert run(design, [0.0] * n).conclusion is Conclusion.PARITY


def test_a_conclusion_is_absorbing():
    design = Design(tolerance=0.1)
    state = run(design, [1.0] * design.pairs_to_revoke())
    assert state.conclusion is Conclusion.LOSS
    assert run(design, [1.0] * design.pairs_to_revoke() + [0.0] * 500).conclusion is Conclusion.LOSS


@pytest.mark.parametrize("bet", [0.3, 0.9])
def test_looking_after_every_pair_keeps_the_false_revocation_rate_under_alpha(bet):
    """At the boundary of the null (mean loss exactly T), 400 streams of 1,000 pairs each, looked
    at after every pair: the share ever revoked stays under alpha (binomial margin 3 sd)."""
    design, rng = Design(tolerance=0.1, alpha=0.1, bet=bet), random.Random(7)
    revoked = 0
    for _ in range(400):
        state = run(design, pairs(0.15, 0.05, 1000, rng))  # mean loss 0.15 - 0.05 = 0.1 = T
        revoked += state.conclusion is Conclusion.LOSS
    assert revoked / 400 <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 400)


def test_a_clearly_worse_candidate_is_revoked_and_a_clearly_equal_one_is_not():
    design, rng = Design(tolerance=0.05, alpha=0.05), random.Random(3)
    worse = run(design, pairs(0.3, 0.0, 400, rng))
    equal = run(design, pairs(0.0, 0.0, 400, rng))
    assert worse.conclusion is Conclusion.LOSS and worse.pairs == 400
    assert equal.conclusion is Conclusion.PARITY
    assert worse.mean_loss == pytest.approx(0.3, abs=0.07)


def test_a_loss_outside_its_range_is_refused():
    with pytest.raises(ValueError):
        TestState().add(Design(0.05), 1.5)
