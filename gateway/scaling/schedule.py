"""A variant's floor by the time of day: the predictable part of a diurnal fleet.

Teams autoscale diurnal traffic with a schedule beside a reactive signal (KEDA's cron scaler
beside a Prometheus trigger, or an HPA's ``minReplicas`` moved by a CronJob): the schedule holds
what every day needs at that hour, so the reactive part only answers what today adds to it, and
can afford to wait out a burst. Here the schedule is a floor on the gauge itself: the gauge
reports max(the schedule's count now, what the demand needs), so an HPA and a KEDA ScaledObject
both act on it through the one metric they already read, and a replay's HPA models exactly that.

A step says how many replicas to ask for from its time of day (seconds after midnight UTC) until
the next step's; before the day's first step the last one still holds (it began the day before).
The times are when to ask, not when to serve: whoever writes a schedule leads it by a replica's
start-up and the HPA's scale-up window (``duet plan-day --floor-days`` does).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class ScheduleStep:
    """From ``at_s`` seconds after midnight (UTC), ask for at least ``replicas``."""

    at_s: float
    replicas: int


@dataclass(frozen=True, slots=True)
class FloorSchedule:
    """A day's steps, in time order (at least one; each time in [0, 86400), each later than the last)."""

    steps: tuple[ScheduleStep, ...]

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError("a schedule needs at least one step")
        times = [s.at_s for s in self.steps]
        if any(not 0 <= t < DAY_S for t in times) or any(b <= a for a, b in zip(times, times[1:], strict=False)):
            raise ValueError(f"schedule times {times}: in [0, {DAY_S:g}) s, each later than the last")
        if any(s.replicas < 0 for s in self.steps):
            raise ValueError("schedule replicas: >= 0")

    def at(self, seconds_of_day: float) -> int:
        """The replicas the schedule asks for at ``seconds_of_day`` (taken modulo a day)."""
        index = bisect.bisect_right([s.at_s for s in self.steps], seconds_of_day % DAY_S) - 1
        return self.steps[index].replicas  # -1: the day's last step, begun the day before

    @property
    def most(self) -> int:
        return max(s.replicas for s in self.steps)


def from_counts(counts: list[int], period_s: float, lead_s: float) -> FloorSchedule:
    """The schedule that has ``counts[k]`` replicas serving through the k-th ``period_s`` of the
    day: each asked for ``lead_s`` before its period starts (wrapping over midnight), equal
    neighbours merged."""
    if not counts or period_s <= 0 or len(counts) * period_s > DAY_S + 1e-6:
        raise ValueError("counts: one per period of at most a day, period_s > 0")
    steps = sorted(((k * period_s - lead_s) % DAY_S, n) for k, n in enumerate(counts))
    merged: list[ScheduleStep] = []
    for at_s, replicas in steps:
        if not merged or merged[-1].replicas != replicas:
            merged.append(ScheduleStep(round(at_s, 3), replicas))
    if len(merged) > 1 and merged[0].replicas == steps[-1][1]:
        merged.pop(0)  # the day's first step repeats the count the last one carries over midnight
    return FloorSchedule(tuple(merged))
