"""A schedule floor learned from history (issue #37): the fleet a past day's traffic needed at
each period, asked for ahead of time, held under the reactive gauge.

History here is the tuning window's days (``DAY_WINDOWS["tuning"]``), seeds ``spec.seed + 1``
onwards: never the held-out window a scored day replays, and never the tuning day of seed
``spec.seed`` on which ``duet plan-day --window tuning`` chooses the settings. Per period, each
history day's per-period plan (``daily.period_plan``: the gauge's arithmetic, on the capacity
curve where there is one, at the period's whole traffic) and their median (the higher middle of
an even count), less ``margin`` replicas left to the reactive part (never below 0); each count
asked for ``lead_s`` before its period starts (a replica's start-up
and the HPA's scale-up window: the HPA sees a raised floor only once its window holds nothing
lower), rounded up to a minute, as a cron schedule would be.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping
from typing import Any

from gateway.autoscaling import FloorSchedule, schedule_from_counts
from gateway.fleet.capacity.days.daily import DaySpec, seed_day


def lead_of(spec: DaySpec) -> float:
    """How long before a period its count is asked for: start-up and scale-up window, in whole minutes."""
    return 60.0 * math.ceil((spec.startup_s + spec.scale_up_s) / 60.0 - 1e-9)


def history_counts(spec: DaySpec, days: int, margin: int = 0) -> dict[str, list[int]]:
    """Per variant, per period of the day, the median count of ``days`` history days' plans less ``margin``."""
    if days < 1:
        raise ValueError(f"days {days}: at least 1")
    history = dataclasses.replace(spec, window="tuning", schedule={})
    plans = [seed_day(history, k).plan for k in range(1, days + 1)]
    variants = sorted(plans[0][0])
    return {v: [max(0, statistics.median_high(plan[k][v] for plan in plans) - margin) for k in range(len(spec.day))]
            for v in variants}


def learned_floor(spec: DaySpec, days: int, margin: int = 0) -> dict[str, FloorSchedule]:
    """Per variant, the schedule floor ``days`` history days give (no variant whose counts are all 0)."""
    lead_s = lead_of(spec)
    return {v: schedule_from_counts(counts, spec.period_s, lead_s)
            for v, counts in history_counts(spec, days, margin).items() if any(counts)}


def as_config(schedule: Mapping[str, FloorSchedule]) -> dict[str, list[dict[str, Any]]]:
    """The floor as duet.yaml's ``autoscaling.schedule_by_variant`` writes it (times HH:MM[:SS], UTC)."""
    def clock(at_s: float) -> str:
        whole = round(at_s)
        hours, minutes, seconds = whole // 3600, whole % 3600 // 60, whole % 60
        return f"{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")
    return {v: [{"at": clock(step.at_s), "replicas": step.replicas} for step in s.steps] for v, s in schedule.items()}


def floor_json(spec: DaySpec, days: int, margin: int = 0) -> dict[str, Any]:
    """The floor a results file records: where it was learned, its lead and its steps (UTC seconds)."""
    less = f", less {margin}" if margin else ""
    return {"history": f"the tuning window's days of seeds {spec.seed + 1}..{spec.seed + days} (per period, the "
                       f"median of their per-period plans{less})",
            "days": days, "margin": margin, "lead_s": lead_of(spec),
            "by_variant": {v: [[step.at_s, step.replicas] for step in s.steps] for v, s in spec.schedule.items()},
            "replica_hours": (hours := _replica_hours(spec.schedule)),
            "usd": round(sum((spec.replicas.fleet_usd({v: 1}, 3600.0) or 0.0) * h for v, h in hours.items()), 2)}


def _replica_hours(schedule: Mapping[str, FloorSchedule]) -> dict[str, float]:
    """Per variant, the replica-hours the floor alone holds over a day."""
    out = {}
    for v, s in schedule.items():
        times = [step.at_s for step in s.steps] + [s.steps[0].at_s + 86400.0]
        out[v] = round(sum(step.replicas * (end - step.at_s) for step, end in zip(s.steps, times[1:], strict=True))
                       / 3600.0, 2)
    return out
