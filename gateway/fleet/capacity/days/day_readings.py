"""What the gauge reads against what its capacity curve was fitted on, for one seed's day
(``duet plan-day --fit --diagnose``): per period, the model's busy replicas over the whole period
(the x a curve point has: a search's whole window of traffic) and the spread of the gauge's
readings inside it (the higher of the 15 s and the 120 s window, every 15 s), each with the count
the curve gives it.

A curve point is the cheapest fleet that meets the target over minutes of traffic, its bursts
included; read at a 15 s peak it sizes the burst on top of a fleet that already absorbs it.
Pure arithmetic over the day's arrivals (counted at arrival here; the gateway counts a request
when it leaves for a replica, which a waiting room delays), no replay.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from gateway.autoscaling import CapacityCurve, DemandMeter, peak
from gateway.fleet.capacity.days.daily import DaySpec, SeedDay
from gateway.fleet.capacity.headroom import busy_replicas, traffic_demand
from gateway.fleet.replay.setup import policy_config


def readings(spec: DaySpec, day: SeedDay) -> list[tuple[float, float]]:
    """(time, the model's busy replicas the gauge reads then), every scrape of the day."""
    config = policy_config(day.cluster, spec.policy, day.prior_error)
    meter, out, arrivals, i = DemandMeter(spec.rate_window_s, 0.0), [], day.schedule, 0
    at = spec.scrape_s
    while at <= spec.day_s:
        while i < len(arrivals) and arrivals[i].at_s < at:
            a = arrivals[i]
            meter.arrived(a.task, a.input_tokens, a.at_s)
            meter.answered(a.task, a.output_tokens, a.at_s)
            i += 1
        demand = peak(meter.demand(at, spec.scrape_s), meter.demand(at, spec.rate_window_s))
        out.append((at, sum(busy_replicas(config, demand).values())))
        at += spec.scrape_s
    return out


def spread(spec: DaySpec, day: SeedDay, variant: str, every: int = 8) -> list[str]:
    """Every ``every``-th period: its whole traffic's busy replicas and the readings' median, 90th
    percentile and largest, each as busy replicas -> the count ``variant``'s curve gives."""
    curve = spec.capacity[variant]
    taken = readings(spec, day)
    config = policy_config(day.cluster, spec.policy, day.prior_error)
    lines = [f"{variant}: the period's busy replicas -> its count, against the gauge's readings in it (median, p90, max)"]
    for k, period in enumerate(spec.day):
        if k % every:
            continue
        end = period.start_s + period.span_s
        inside = [a for a in day.schedule if period.start_s <= a.at_s < end]
        whole = sum(busy_replicas(config, traffic_demand([inside], period.span_s)).values()) if inside else 0.0
        seen = sorted(b for at, b in taken if period.start_s < at <= end)
        lines.append(f"  {period.start_s / 3600:4.1f}h  {_read(curve, whole)}  |  " + ", ".join(
            _read(curve, b) for b in _quantiles(seen)))
    return lines


def _quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    if not values:
        return 0.0, 0.0, 0.0
    return statistics.median(values), values[int(0.9 * (len(values) - 1))], values[-1]


def _read(curve: CapacityCurve, busy: float) -> str:
    return f"{busy:.3f} -> {curve.replicas(busy)}"
