"""Several replays of one setting, summarised with 95% confidence intervals.

Seed ``k`` replays the window shifted by ``k x shift_s`` trace seconds (other arrivals, not only
other step jitter: requests enter and leave at both edges and every burst lands at another
moment of the engines' state), with engines jittered by seed ``k`` and the speed priors' error
drawn by seed ``k``. Seed 0 is the unshifted window. A summary is the mean over seeds of every
number the per-seed summaries hold; good requests, cost and the TTFT p90 also get a Student-t 95%
interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

# Two-sided 95% Student-t quantiles by degrees of freedom; past the table, the normal's.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        15: 2.131, 20: 2.086, 30: 2.042}
INTERVALS = ("good_fraction", "cost_usd", "slo_attainment")


def t95(degrees: int) -> float:
    """The two-sided 95% Student-t quantile for ``degrees`` >= 1 (the next smaller tabled one:
    slightly wide, never narrow)."""
    return _T95[max(d for d in _T95 if d <= degrees)] if degrees <= 30 else 1.96


def interval(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of its 95% interval); half-width 0 for a single value."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def start_for(seed: int, start_s: float, shift_s: float) -> float:
    """The trace second seed ``seed``'s window starts at."""
    return start_s + seed * shift_s


def combine(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One policy's per-seed summaries as one: the mean of each number (nested ones too, over
    the seeds that have it), wall time summed, ``seeds``, ``runs`` (each seed's good fraction
    and cost) and ``<metric>_ci95`` (half-width) for ``INTERVALS``."""
    merged = _mean(runs)
    assert isinstance(merged, dict)
    merged["wall_s"] = round(sum(r.get("wall_s", 0.0) for r in runs), 2)
    variants = dict.fromkeys(v for r in runs for v in r["variant_mix"])  # a seed that never used one used it 0%
    merged["variant_mix"] = {v: round(statistics.fmean(r["variant_mix"].get(v, 0.0) for r in runs), 4) for v in variants}
    merged["seeds"] = len(runs)
    merged["runs"] = [{"good_fraction": r["good_fraction"], "cost_usd": r["cost_usd"]} for r in runs]
    for metric in INTERVALS:
        mean, half = interval([r[metric] for r in runs])
        merged[metric] = round(mean, 4)
        merged[f"{metric}_ci95"] = round(half, 4)
    p90s = [r["ttft_ms"]["p90"] for r in runs if r.get("ttft_ms", {}).get("p90") is not None]
    if len(p90s) == len(runs):  # the TTFT p90's interval, over seeds that all served something
        merged["ttft_p90_ms_ci95"] = round(interval(p90s)[1], 1)
    return merged


def _mean(values: Sequence[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    if isinstance(present[0], Mapping):
        keys = dict.fromkeys(k for v in present for k in v)
        return {k: _mean([v.get(k) for v in present]) for k in keys}
    if isinstance(present[0], bool) or not isinstance(present[0], (int, float)):
        return present[0]
    mean = statistics.fmean(present)
    return round(mean, 4) if isinstance(present[0], float) else round(mean, 1)
