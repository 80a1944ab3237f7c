"""The cheapest fleet that meets a target, by search over replica counts. Pure: the caller says
what a fleet's good share is (``evaluate``, a replay in ``plan.py``) and what it costs.

The search leans on one property: more replicas of either variant never lower the good share
(close enough to true in the replays; the plan checks the fleet it picks on other seeds). Then
the smallest fast count that meets the target never grows as the standard count grows, and

1. the largest fleet allowed is tried first: if it misses the target, no fleet does;
2. the standard count starts at the smallest one that meets it with the most fast replicas
   (bisection), never below the floor (parity: a task the fast variant may not serve needs one);
3. for each standard count from there, the fast count is bisected between 0 and the last one
   found, capped at what the best fleet so far costs; the walk stops once standard replicas
   alone cost more than that fleet.

Equal costs are broken by the higher good share. Every fleet is evaluated at most once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Fleet:
    """Replicas per variant: ``standard`` and ``fast``."""

    standard: int
    fast: int

    @property
    def replicas(self) -> int:
        return self.standard + self.fast

    @property
    def counts(self) -> dict[str, int]:
        return {"standard": self.standard, "fast": self.fast}

    def __str__(self) -> str:
        return f"standard={self.standard},fast={self.fast}"


@dataclass(frozen=True, slots=True)
class Bounds:
    """The fleets searched: ``floor`` <= standard <= ``max_standard``, 0 <= fast <= ``max_fast``
    (0: a standard-only fleet)."""

    max_standard: int
    max_fast: int
    floor: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.floor <= self.max_standard or self.max_fast < 0 or self.max_standard + self.max_fast < 1:
            raise ValueError(f"bad bounds: floor {self.floor}, standard up to {self.max_standard}, "
                             f"fast up to {self.max_fast}")

    @property
    def largest(self) -> Fleet:
        return Fleet(self.max_standard, self.max_fast)


@dataclass(frozen=True, slots=True)
class Found:
    """The search's answer: ``fleet`` (None: not even the largest fleet meets the target) with its
    good share and cost (the largest fleet's when none), and every fleet tried, in order."""

    fleet: Fleet | None
    share: float
    cost: float
    tried: tuple[tuple[Fleet, float], ...]


def cheapest(evaluate: Callable[[Fleet], float], cost: Callable[[Fleet], float], target: float,
             bounds: Bounds) -> Found:
    """The cheapest fleet within ``bounds`` whose good share (``evaluate``, in [0, 1]) is at
    least ``target``; of equally cheap ones, the one with the higher share."""
    shares: dict[Fleet, float] = {}

    def share(fleet: Fleet) -> float:
        if fleet not in shares:
            shares[fleet] = evaluate(fleet)
        return shares[fleet]

    def meets(standard: int, fast: int) -> bool:
        return share(Fleet(standard, fast)) >= target

    largest = bounds.largest
    if not meets(largest.standard, largest.fast):
        return Found(None, share(largest), cost(largest), tuple(shares.items()))
    first = smallest(lambda s: meets(s, bounds.max_fast), bounds.floor, bounds.max_standard)
    best: Fleet | None = None
    fast_high = bounds.max_fast
    for standard in range(first, bounds.max_standard + 1):
        if best is not None and cost(Fleet(standard, 0)) > cost(best):
            break
        limit = fast_high
        while best is not None and cost(Fleet(standard, limit)) > cost(best):
            limit -= 1
        if not meets(standard, limit):
            continue
        fast_high = smallest(lambda f: meets(standard, f), 0, limit)  # noqa: B023 (called here, at once)
        candidate = Fleet(standard, fast_high)
        if best is None or (cost(candidate), -share(candidate)) < (cost(best), -share(best)):
            best = candidate
    assert best is not None  # the first standard count meets the target with the most fast replicas
    return Found(best, share(best), cost(best), tuple(shares.items()))


def smallest(holds: Callable[[int], bool], low: int, high: int) -> int:
    """The smallest n in [low, high] for which ``holds`` (monotone: False then True), given that
    ``holds(high)``; bisection, so about log2(high - low) calls."""
    while low < high:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle + 1
    return high
