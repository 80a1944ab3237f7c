"""An always-valid sequential test on paired outcomes, by betting (Waudby-Smith and Ramdas,
"Estimating means of bounded random variables by betting", 2023; with a constant bet it is
Wald's sequential probability ratio accumulator).

Each pair gives the candidate's loss ``d = standard score - candidate score`` in [-1, 1]. Two
wealth processes start at 1 and are multiplied at every pair:

- against parity:  ``K_revoke *= 1 + lam_r * (d - T)``, ``lam_r = bet / (1 + T)``
- for parity:      ``K_open   *= 1 + lam_o * (T - d)``, ``lam_o = bet / (1 - T)``

Under the hypothesis "the mean loss is at most T" the first is a nonnegative supermartingale,
so by Ville's inequality the chance it EVER reaches 1/alpha is at most alpha, however often it
is looked at; likewise the second under "the mean loss is at least T". So the gateway may judge
after every pair without inflating the error: revoke once ``K_revoke >= 1/alpha``, open once
``K_open >= 1/alpha``. Pure and synchronous; the state is a frozen value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class Conclusion(StrEnum):
    UNDECIDED = "undecided"
    LOSS = "loss"  # the loss exceeds the tolerance: revoke
    PARITY = "parity"  # the loss is below the tolerance: a shadow variant's task may open


@dataclass(frozen=True, slots=True)
class Design:
    """``tolerance`` T in (0, 1): the largest mean loss accepted; ``alpha``: the error bound over
    the whole unbounded sequence of looks (1 - the configured confidence); ``bet`` in (0, 1): the
    fraction of the largest safe bet staked on each pair (larger: faster when the truth is far
    from T, slower when it is near)."""

    tolerance: float
    alpha: float = 0.05
    bet: float = 0.5

    @property
    def threshold(self) -> float:
        """log(1/alpha): the log-wealth at which a conclusion is drawn."""
        return math.log(1 / self.alpha)

    @property
    def revoke_bet(self) -> float:
        return self.bet / (1 + self.tolerance)

    @property
    def open_bet(self) -> float:
        return self.bet / (1 - self.tolerance)

    def pairs_to_revoke(self, clean_pairs: int = 0) -> int:
        """Pairs the test needs to revoke a candidate that loses every pair (d = 1) after
        ``clean_pairs`` pairs without a loss (d = 0)."""
        head = -clean_pairs * math.log1p(-self.revoke_bet * self.tolerance)
        return math.ceil((self.threshold + head) / math.log1p(self.revoke_bet * (1 - self.tolerance)) - 1e-9)

    def pairs_to_open(self) -> int:
        """Pairs the test needs to conclude parity when the candidate never loses (d = 0)."""
        return math.ceil(self.threshold / math.log1p(self.open_bet * self.tolerance) - 1e-9)


@dataclass(frozen=True, slots=True)
class TestState:
    """The test after ``pairs`` pairs: the two log-wealths, the summed loss, and the conclusion
    (absorbing: once drawn, later pairs do not change it)."""

    __test__ = False  # not a pytest class

    pairs: int = 0
    loss_sum: float = 0.0
    log_wealth_loss: float = 0.0
    log_wealth_parity: float = 0.0
    conclusion: Conclusion = Conclusion.UNDECIDED

    @property
    def mean_loss(self) -> float:
        return self.loss_sum / self.pairs if self.pairs else 0.0

    def add(self, design: Design, loss: float) -> TestState:
        """The state after one more pair whose loss (standard - candidate score) is ``loss``."""
        if not -1.0 <= loss <= 1.0:
            raise ValueError(f"a pair's loss is in [-1, 1], got {loss}")
        t = design.tolerance
        against = self.log_wealth_loss + math.log1p(design.revoke_bet * (loss - t))
        for_parity = self.log_wealth_parity + math.log1p(design.open_bet * (t - loss))
        conclusion = self.conclusion
        if conclusion is Conclusion.UNDECIDED:
            if against >= design.threshold:
                conclusion = Conclusion.LOSS
            elif for_parity >= design.threshold:
                conclusion = Conclusion.PARITY
        return TestState(self.pairs + 1, self.loss_sum + loss, against, for_parity, conclusion)
