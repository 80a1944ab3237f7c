"""Where a policy's good share crosses a level as load grows (goodput at 99% or 95% good), over
seeds, and how two policies' crossings compare.

A crossing is exact only when the tried loads bracket it; otherwise it is a bound and says so
(``at_least`` the highest load tried, ``below`` the lowest), never a number pretending to be exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gateway.fleet.replay.seeds import interval

Kind = Literal["exact", "at_least", "at_most", "below", "undetermined"]


@dataclass(frozen=True, slots=True)
class Crossing:
    """One seed's crossing: ``value`` is exact, a lower bound (``at_least``), an upper bound
    (``at_most``, ``below``: under the lowest load tried) or nothing known (``undetermined``).
    ``nonmonotone``: a load under the crossing already fell short (the share is not monotone)."""

    kind: Kind
    value: float | None
    nonmonotone: bool = False

    def scaled(self, factor: float) -> Crossing:
        """The same crossing in other units (load multiples -> req/s)."""
        return Crossing(self.kind, None if self.value is None else self.value * factor, self.nonmonotone)


def crossing(loads: Sequence[float], scores: Sequence[float], level: float) -> Crossing:
    """The highest load whose ``score`` (good share, or any value falling with load) is >= ``level``,
    interpolated linearly between the highest passing load and the next load tried above it (which
    fails), as vLLM's serve_sla interpolates between tried rates. ``loads`` need not be sorted."""
    points = sorted(zip(loads, scores, strict=True))
    passing = [i for i, (_, s) in enumerate(points) if s >= level]
    if not passing:
        return Crossing("below", points[0][0])
    top = passing[-1]
    nonmonotone = any(s < level for _, s in points[:top])
    if top == len(points) - 1:
        return Crossing("at_least", points[top][0], nonmonotone)
    (x0, s0), (x1, s1) = points[top], points[top + 1]
    return Crossing("exact", x0 + (s0 - level) / (s0 - s1) * (x1 - x0), nonmonotone)


@dataclass(frozen=True, slots=True)
class Estimate:
    """Crossings over seeds: the mean and its 95% half-width when every seed's is exact; else a
    bound on the mean (the mean of lower bounds bounds the mean from below) without an interval."""

    kind: Kind
    mean: float | None
    ci95: float | None
    seeds: int
    nonmonotone: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "mean": _round(self.mean), "ci95": _round(self.ci95), "seeds": self.seeds,
                "nonmonotone_seeds": self.nonmonotone}


def estimate(crossings: Sequence[Crossing]) -> Estimate:
    """The seeds' crossings as one estimate (see ``Estimate``)."""
    kinds = {c.kind for c in crossings}
    nonmonotone = sum(c.nonmonotone for c in crossings)
    values = [c.value for c in crossings if c.value is not None]
    if kinds == {"exact"}:
        mean, half = interval(values)
        return Estimate("exact", mean, half, len(crossings), nonmonotone)
    for bound, allowed in (("at_least", {"exact", "at_least"}), ("at_most", {"exact", "at_most", "below"})):
        if kinds <= allowed and len(values) == len(crossings):
            kind: Kind = "below" if kinds == {"below"} else bound  # type: ignore[assignment]
            return Estimate(kind, sum(values) / len(values), None, len(crossings), nonmonotone)
    return Estimate("undetermined", None, None, len(crossings), nonmonotone)


# What a ratio ours / theirs is, by the kinds of its two crossings (ours first).
_RATIO_KIND: dict[tuple[str, str], Kind] = {
    ("exact", "exact"): "exact",
    ("at_least", "exact"): "at_least", ("exact", "below"): "at_least", ("at_least", "below"): "at_least",
    ("exact", "at_least"): "at_most", ("below", "exact"): "at_most", ("below", "at_least"): "at_most",
}


def ratio(ours: Crossing, theirs: Crossing) -> Crossing:
    """``ours / theirs`` for one seed (paired: the same window), exact or the bound that follows."""
    kind = _RATIO_KIND.get((ours.kind, theirs.kind), "undetermined")
    if kind == "undetermined" or not ours.value or not theirs.value:
        return Crossing("undetermined", None)
    return Crossing(kind, ours.value / theirs.value, ours.nonmonotone or theirs.nonmonotone)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
