"""A plan's capacity curve (issue #37): the cheapest fleet of the configuration ``duet plan`` chose
(its layout and engine roles) at several fractions of the plan's rate, each found by the same
count search on the plan's tuning seeds, and per variant a line fitted through (the model's busy
replicas at that traffic, replicas needed - 0.5) by least squares (``gateway.scaling.
capacity_curve`` says why the midpoint and why the model's load). The gauge then sizes each period
of a day on the line, at the traffic it measures, instead of on one utilisation measured at the
peak.

A lower rate never needs more of a variant than the peak does (the search's monotone property),
so each point's search is bounded by the peak fleet: a handful of replays per point. Nothing here
sees the held-out window: the points are the tuning window's, as the plan's search was.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.autoscaling import CapacityCurve
from gateway.fleet.capacity.layout import Deployment, Layout, laid_out
from gateway.fleet.capacity.plan import PlanSpec, Replays, fleet_usd_per_hour, parity_floor
from gateway.fleet.capacity.roles import ROLE_MIXES
from gateway.fleet.capacity.search import Bounds, Fleet, cheapest
from gateway.fleet.replay.windows import Window


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """One load: its rate scale, the cheapest fleet meeting the target there (None: not even the
    peak's), its good share on the tuning seeds, and the model's busy replicas at its traffic."""

    rate_scale: float
    fleet: Fleet | None
    share: float
    busy: float

    def as_dict(self) -> dict[str, Any]:
        return {"rate_scale": round(self.rate_scale, 4), "fleet": None if self.fleet is None else self.fleet.counts,
                "share": self.share, "busy_replicas": round(self.busy, 4)}


def fit_line(points: Sequence[tuple[float, float]]) -> CapacityCurve:
    """The least-squares line through ``points`` (x, y), its slope at least 0; one point (or one
    x) gives the line through the origin and it."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    if len(set(xs)) < 2:
        x, y = statistics.fmean(xs), statistics.fmean(ys)
        return CapacityCurve(0.0, max(0.0, y / x) if x > 0 else 0.0)
    slope = max(0.0, statistics.linear_regression(xs, ys).slope)
    return CapacityCurve(round(statistics.fmean(ys) - slope * statistics.fmean(xs), 4), round(slope, 4))


def curves_of(points: Sequence[CurvePoint], variants: Sequence[str]) -> dict[str, CapacityCurve]:
    """Per variant, the line through (busy, replicas - 0.5) of the points that found a fleet."""
    found = [p for p in points if p.fleet is not None and p.busy > 0]
    return {v: fit_line([(p.busy, p.fleet.counts[v] - 0.5) for p in found if p.fleet is not None]) for v in variants}


def fit(spec: PlanSpec, policy: str, layout: Layout, peak: Fleet, peak_share: float,
        fractions: Sequence[float]) -> tuple[CurvePoint, ...]:
    """The curve's points: at each fraction of the plan's rate (1: the plan's own fleet and share,
    not searched again), the cheapest fleet of ``layout`` within the peak fleet's counts."""
    replicas = laid_out(spec.replicas, layout)
    points: list[CurvePoint] = []
    for fraction in sorted(set(fractions)):
        at = dataclasses.replace(spec, rate_scale=spec.rate_scale * fraction)
        tuning = Replays(at, policy, at.search, at.search_seeds)
        busy = sum(tuning.busy_replicas(replicas).values())
        if fraction == 1:
            points.append(CurvePoint(at.rate_scale, peak, peak_share, busy))
            continue
        floor = min(parity_floor(spec.replicas, tuning.tasks), peak.standard)
        found = cheapest(lambda f: tuning.share(f, replicas, layout),  # noqa: B023 (called here, at once)
                         lambda f: fleet_usd_per_hour(replicas, f), spec.target,
                         Bounds(peak.standard, peak.fast, floor))
        points.append(CurvePoint(at.rate_scale, found.fleet, found.share, busy))
    return tuple(points)


def spec_of(results: Mapping[str, Any]) -> PlanSpec:
    """The ``PlanSpec`` a ``duet plan`` results file was made with (its layouts aside)."""
    return PlanSpec(results["trace"], results["replica_set"], results["target"], results["rate_scale"],
                    _window(results["search"]), results["search"]["seeds"], _window(results["check"]),
                    results["check"]["seeds"], results["max_replicas"], results["seed"], results["prior_error"],
                    results["length_quantile"])


def layout_of(plan: Mapping[str, Any]) -> Layout | None:
    """A policy's chosen layout and role mix from its results entry (None: a plan without layouts)."""
    layout = plan.get("layout")
    if layout is None:
        return None
    fast = layout.get("fast")
    roles = plan.get("roles")
    return Layout(Deployment(**layout["standard"]), None if fast is None else Deployment(**fast),
                  None if roles is None else ROLE_MIXES[roles])


def _window(w: Mapping[str, Any]) -> Window:
    return Window(w["name"], w["start_s"], w["span_s"], w["shift_s"])
