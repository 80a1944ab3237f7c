"""A day of traffic: the shipped traces' held-out stretch replayed period by period at rates that
follow a daily curve, so a fleet sized for the peak can be compared with one that follows the day.

The curve. LLM services see one cycle a day: busy in working hours, quiet before dawn (SageServe,
Jaiswal et al., POMACS 2025 / arXiv 2502.14617, characterises Microsoft Office 365's LLM
traffic, >10M requests a day, with such a daily cycle per region; Splitwise's Azure traces are
one hour each and show none). No hour-by-hour series is public here, so the shape is a raised
cosine between a trough at ``trough_hour`` (04:00) and a peak twelve hours later, and its depth,
``peak_to_trough`` (default 3: the trough runs at a third of the peak), is an assumption, stated
with every result and a parameter to vary, not a measurement.

The requests. Each period (15 minutes by default) replays a stretch of the held-out window
(trace seconds from 1,500; never the tuning window the plan searched on) at the period's rate
(a tuning day, for choosing the autoscaler's settings, replays stretches that start in trace
seconds 0-1,000 and end before 1,500 instead):
``peak_scale`` x the curve at the period's middle, each period starting at a different offset so
that consecutive periods do not repeat one stretch. The traces are an hour long, so a day reuses
their requests: the same prompts, at other times and rates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gateway.fleet.replay.setup import Cluster
from gateway.fleet.replay.windows import HELDOUT, Window
from gateway.fleet.workload.traces import Arrival, TraceWindow, replay_arrivals, task_traces

DAY_S = 24 * 3600.0
# Period starts are spread over the held-out window by this stride (trace seconds; coprime with
# its 1,200 s, so 96 periods start at 96 different offsets).
_STRIDE_S = 383.0


@dataclass(frozen=True, slots=True)
class DiurnalCurve:
    """The rate through a day relative to its peak: 1 at ``trough_hour + 12``, ``1 / peak_to_trough``
    at ``trough_hour``, a raised cosine between."""

    peak_to_trough: float = 3.0
    trough_hour: float = 4.0

    def __post_init__(self) -> None:
        if self.peak_to_trough < 1:
            raise ValueError(f"peak_to_trough {self.peak_to_trough}: at least 1")

    def at(self, hour: float) -> float:
        low = 1.0 / self.peak_to_trough
        return low + (1.0 - low) * (1.0 - math.cos(2 * math.pi * (hour - self.trough_hour) / 24.0)) / 2.0

    @property
    def mean(self) -> float:
        """The day's mean rate relative to its peak."""
        return (1.0 + 1.0 / self.peak_to_trough) / 2.0


@dataclass(frozen=True, slots=True)
class Period:
    """One period of the day: when it starts (s from midnight), how long, its rate scale."""

    start_s: float
    span_s: float
    rate_scale: float


def periods(curve: DiurnalCurve, peak_scale: float, period_s: float = 900.0, day_s: float = DAY_S) -> tuple[Period, ...]:
    if period_s <= 0 or day_s < period_s or peak_scale <= 0:
        raise ValueError("period_s > 0, day_s >= period_s and peak_scale > 0")
    count = round(day_s / period_s)
    return tuple(Period(k * period_s, period_s, peak_scale * curve.at((k + 0.5) * period_s / 3600.0))
                 for k in range(count))


def day_arrivals(traces: Sequence[str], cluster: Cluster, day: Sequence[Period], seed_index: int = 0,
                 window: Window = HELDOUT) -> tuple[Arrival, ...]:
    """The day's requests in order: each period's stretch of ``window`` at its rate, shifted to
    the period's start (seed ``k`` starts every period ``window.shift_s`` trace seconds later)."""
    loaded = task_traces(traces)
    out: list[Arrival] = []
    for k, period in enumerate(day):
        start = window.start_s + (k * _STRIDE_S + seed_index * window.shift_s) % window.span_s
        for a in replay_arrivals(loaded, TraceWindow(period.span_s, rate_scale=period.rate_scale, start_s=start),
                                 max_context=cluster.replica_set.max_context):
            out.append(replace(a, at_s=period.start_s + a.at_s))
    return tuple(out)
