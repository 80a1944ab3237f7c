"""The highest load at which a set of constraints holds, by search instead of a grid: try the
lowest and the highest load (the bracket), then bisect between the highest load that held and
the lowest above it that did not, a fixed number of steps; the answer interpolates the binding
constraint's margin to zero between those two (vLLM's serve_sla interpolates between tried rates
too). Pure: the caller replays each load ``next_load`` asks for and records what it found.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.fleet.sweep.knee import Crossing


@dataclass(frozen=True, slots=True)
class Trial:
    """One tried load: whether every constraint held, and the binding one's margin (> 0: broken)."""

    load: float
    passed: bool
    margin: float


@dataclass(frozen=True, slots=True)
class Bracket:
    """The range searched and how many bisection steps follow the two ends."""

    low: float
    high: float
    steps: int = 4

    def __post_init__(self) -> None:
        if not 0 < self.low < self.high or self.steps < 0:
            raise ValueError(f"search range {self.low:g}:{self.high:g} must be 0 < LO < HI, steps >= 0")


def next_load(bracket: Bracket, trials: Sequence[Trial]) -> float | None:
    """The next load to try, or None when the search is over."""
    tried = {t.load: t for t in trials}
    if bracket.low not in tried:
        return bracket.low
    if not tried[bracket.low].passed:
        return None
    if bracket.high not in tried:
        return bracket.high
    if tried[bracket.high].passed or len(trials) - 2 >= bracket.steps:
        return None
    below, above = _ends(trials)
    return (below.load + above.load) / 2


def result(bracket: Bracket, trials: Sequence[Trial]) -> Crossing:
    """Where the constraints stop holding, from the trials of a finished search."""
    tried = {t.load: t for t in trials}
    if not tried[bracket.low].passed:
        return Crossing("below", bracket.low)
    if tried[bracket.high].passed:
        return Crossing("at_least", bracket.high, any(not t.passed for t in trials))
    below, above = _ends(trials)
    nonmonotone = any(not t.passed and t.load < below.load for t in trials)
    if math.isinf(above.margin) or above.margin <= below.margin:
        return Crossing("exact", below.load, nonmonotone)  # no slope to follow: the last load that held
    share = (0.0 - below.margin) / (above.margin - below.margin)
    return Crossing("exact", below.load + min(1.0, max(0.0, share)) * (above.load - below.load), nonmonotone)


def bracket_of(trials: Sequence[Trial]) -> tuple[float, float]:
    """(highest load that held, lowest load above it that did not)."""
    below, above = _ends(trials)
    return below.load, above.load


def _ends(trials: Sequence[Trial]) -> tuple[Trial, Trial]:
    below = max((t for t in trials if t.passed), key=lambda t: t.load)
    above = min((t for t in trials if not t.passed and t.load > below.load), key=lambda t: t.load)
    return below, above
