"""A day replayed three ways (issue #27): the fleet ``duet plan`` sized for the peak, kept all day;
the plan per period (the gauge's arithmetic on each period's traffic, with the plan's
utilisation: what a schedule known in advance would run); and the fleet the gauge and an HPA
scale as the traffic comes (``gateway.fleet.replay.autoscale``). The fixed and the autoscaled fleets
are replayed request by request; the per-period plan is counted, not replayed.

Everything the gateway would not know stays out: the autoscaler reads only what the gateway's
demand store holds, counted by the gateway's own hooks (each request once, when it leaves for
its first replica or the fleet refuses it, with its prompt length; answers as they end well),
and the utilisation is the one the plan measured on the tuning window. The gateway's speed
priors are the plan's (off by the error its first seed drew): one deployment plans and runs
with the same calibrated priors, so the gauge's arithmetic and the utilisation it divides by
share their error. A seed varies the trace stretches and the engines' jitter. (A first run drew
each day seed's priors anew: seed 1's fast prefill prior, half of seed 0's, made the gauge ask
for twice the replicas the plan's utilisation meant: 1.2x the fixed fleet's cost against seed
0's 0.74-0.78x, with demand then counted at arrival.)
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gateway.autoscaling import Autoscaling, CapacityCurve, FloorSchedule, desired_replicas
from gateway.fleet.capacity.days.day import DAY_S, DiurnalCurve, Period, day_arrivals, periods
from gateway.fleet.capacity.headroom import sizing_of, traffic_demand
from gateway.fleet.capacity.layout import Layout, laid_out
from gateway.fleet.replay.autoscale import STARTUP_S, AutoscaledRun, run_autoscaled
from gateway.fleet.replay.engine_mix import WantedEngines, by_groups, groups_of
from gateway.fleet.replay.fleet import FleetTimeline
from gateway.fleet.replay.policy_names import parse_policy_name
from gateway.fleet.replay.report import summarize
from gateway.fleet.replay.request_result import RequestResult
from gateway.fleet.replay.seeds import interval
from gateway.fleet.replay.setup import Cluster, policy_config, scrape_interval_s
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.replay.windows import DAY_WINDOWS
from gateway.fleet.workload.traces import Arrival
from gateway.fleet.world.prior_error import PriorError
from gateway.fleet.world.replica_sets import REPLICA_SETS, ReplicaSet


@dataclass(frozen=True, slots=True)
class DaySpec:
    """A day's traffic and the plan it starts from (a ``duet plan`` results file's fields)."""

    replica_set: str
    trace: str
    peak_scale: float
    target: float
    policy: str
    peak_fleet: Mapping[str, int]
    utilisation: Mapping[str, float]
    curve: DiurnalCurve = DiurnalCurve()
    period_s: float = 900.0
    day_s: float = DAY_S
    seeds: int = 2
    seed: int = 0
    prior_error: float = 0.3
    length_quantile: float = 0.5
    startup_s: float = STARTUP_S
    scrape_s: float = 15.0
    rate_window_s: float = 120.0
    stabilization_s: float = 300.0
    scale_up_s: float = 0.0
    max_replicas: int = 16
    window: str = "heldout"
    # Per variant, replicas as a line fitted over several loads (``curve.py``); a variant with
    # one is sized on it, not on its utilisation.
    capacity: Mapping[str, CapacityCurve] = field(default_factory=dict)
    # The plan's layout and engine roles (None: the profiles' own, no roles).
    layout: Layout | None = None
    # Replay the peak's fixed fleet too (False: counted, not replayed).
    replay_fixed: bool = True
    # The task types the gauge keeps a replica warm for (None: every configured one); the plan's
    # traffic's, as its search's parity floor counts them.
    warm_tasks: frozenset[str] | None = None
    # Each variant one Deployment, its shrinks blind to engine roles (``AutoscaledRun``): what
    # per-role Deployments buy, measured by ``day_diagnose --deployment-per-variant``.
    deployment_per_variant: bool = False
    # Per variant, a floor by the time of day (``day_floor.py`` learns it from tuning days): the
    # gauge reports max(schedule, reactive). Empty: the reactive gauge alone.
    schedule: Mapping[str, FloorSchedule] = field(default_factory=dict)
    # At most this many replicas added per variant per ``scale_up_period_s`` (the HPA's scaleUp
    # policy; None: no cap).
    scale_up_pods: int | None = None
    scale_up_period_s: float = 60.0

    @property
    def replicas(self) -> ReplicaSet:
        base = REPLICA_SETS[self.replica_set]
        return base if self.layout is None else laid_out(base, self.layout)

    @property
    def autoscaling(self) -> Autoscaling:
        return Autoscaling(utilisation=min(self.utilisation.values(), default=0.7), scrape_interval_s=self.scrape_s,
                           rate_window_s=self.rate_window_s, scale_down_stabilization_s=self.stabilization_s,
                           max_replicas=self.max_replicas, utilisation_by_variant=dict(self.utilisation),
                           scale_up_stabilization_s=self.scale_up_s, capacity_by_variant=dict(self.capacity),
                           warm_tasks=self.warm_tasks, schedule_by_variant=dict(self.schedule),
                           scale_up_pods=self.scale_up_pods, scale_up_period_s=self.scale_up_period_s)

    def policy_for(self, counts: Mapping[str, int]) -> str:
        """The replay policy over ``counts`` replicas per variant: the plan's, with its roles laid over them."""
        return self.policy + ("" if self.layout is None else self.layout.suffix(counts))

    def wanted_engines(self, disaggregated: bool) -> WantedEngines | None:
        """The engines the autoscaler keeps a variant's replicas at, per count: the engine groups
        the plan's roles lay over its peak fleet (what ``duet plan --write-config`` writes and
        ``duet deploy render`` starts, one Deployment each), split over each count as the
        deployed gauge splits them (``engine_mix.by_groups``). None: no roles, every replica on
        the launch profile's engine."""
        mix = None if self.layout is None else self.layout.roles
        if mix is None:
            return None
        return by_groups({variant: groups_of(mix.engines(variant, count, disaggregated))
                          for variant, count in self.peak_fleet.items()})

    @property
    def day(self) -> tuple[Period, ...]:
        return periods(self.curve, self.peak_scale, self.period_s, self.day_s)


def period_plan(spec: DaySpec, schedule: Sequence[Any], cluster: Cluster) -> list[dict[str, int]]:
    """Per period, the replicas per variant the gauge's arithmetic asks for its traffic."""
    config = policy_config(cluster, spec.policy, cluster.prior_error(spec.prior_error, spec.seed))
    (model,) = config.models.values()
    variants, sizing = list(model.variants.values()), sizing_of(config)
    plan: list[dict[str, int]] = []
    for period in spec.day:  # the schedule is in time order: each period is one slice of it
        first = bisect.bisect_left(schedule, period.start_s, key=lambda a: a.at_s)
        last = bisect.bisect_left(schedule, period.start_s + period.span_s, key=lambda a: a.at_s)
        inside = schedule[first:last]
        demand = traffic_demand([inside], period.span_s) if inside else {}
        needs = desired_replicas(variants, demand, sizing, spec.autoscaling)
        plan.append({name: need.desired for name, need in sorted(needs.items())})
    return plan


@dataclass(frozen=True, slots=True)
class SeedDay:
    """Seed ``index``'s day as every fleet replays it: the requests (``schedule``), the replay's
    settings, the speed priors' error (the plan's draw) and the per-period plan (``plan``)."""

    index: int
    seed: int
    cluster: Cluster
    prior_error: PriorError
    schedule: Sequence[Arrival]
    settings: ReplaySettings
    plan: list[dict[str, int]]


def seed_day(spec: DaySpec, index: int) -> SeedDay:
    """Seed ``index``'s requests, settings and per-period plan."""
    cluster = Cluster(spec.replicas, dict(spec.peak_fleet))
    prior_error = cluster.prior_error(spec.prior_error, spec.seed)  # the plan's draw, every seed
    schedule = day_arrivals(spec.trace.split(","), cluster, spec.day, index, DAY_WINDOWS[spec.window])
    settings = ReplaySettings(spec.seed + index, scrape_interval_s(spec.policy), length_quantile=spec.length_quantile)
    return SeedDay(index, spec.seed + index, cluster, prior_error, schedule, settings,
                   period_plan(spec, schedule, cluster))


def replay_autoscaled(spec: DaySpec, day: SeedDay) -> tuple[list[RequestResult], FleetTimeline]:
    """The day's requests through the fleet the gauge and an HPA scale. It starts as the first
    period's plan, its replicas on the engines the plan's groups split into at those counts."""
    start = Cluster(spec.replicas, dict(day.plan[0]))
    policy = spec.policy_for(day.plan[0])
    run = AutoscaledRun(spec.autoscaling, None, spec.startup_s, spec.day_s,
                        spec.wanted_engines(parse_policy_name(policy).pd is not None), spec.deployment_per_variant)
    return run_autoscaled(policy_config(start, policy, day.prior_error), day.cluster.profiles(), day.schedule, run,
                          day.settings)


def replay_day(spec: DaySpec, index: int) -> dict[str, Any]:
    """Seed ``index``: the day's requests through the fixed peak fleet and the autoscaled one."""
    day = seed_day(spec, index)
    cluster, schedule, plan, parity = day.cluster, day.schedule, day.plan, day.cluster.parity
    fixed_good = None
    if spec.replay_fixed:
        fixed = Replay(policy_config(cluster, spec.policy_for(spec.peak_fleet), day.prior_error), cluster.profiles(),
                       day.settings).run(schedule)
        fixed_good = summarize(fixed, spec.day_s, parity)["good_fraction"]
    fixed_usd = spec.replicas.fleet_usd(spec.peak_fleet, spec.day_s)
    plan_usd = sum(spec.replicas.fleet_usd(counts, p.span_s) or 0.0 for counts, p in zip(plan, spec.day, strict=True))
    results, timeline = replay_autoscaled(spec, day)
    return {
        "seed": day.seed,
        "requests": len(schedule),
        "fixed": {"fleet": dict(spec.peak_fleet), "good_fraction": fixed_good,
                  "replica_hours": round(sum(spec.peak_fleet.values()) * spec.day_s / 3600.0, 2),
                  "usd": None if fixed_usd is None else round(fixed_usd, 2)},
        "period_plan": {"counts": plan, "usd": round(plan_usd, 2),
                        "replica_hours": round(sum(sum(c.values()) * p.span_s for c, p in zip(plan, spec.day, strict=True))
                                               / 3600.0, 2)},
        "autoscaled": {"good_fraction": summarize(results, spec.day_s, parity)["good_fraction"],
                       **timeline.summary(spec.replicas),
                       "hourly_asked": _hourly(timeline, spec.day_s)},
    }


def _hourly(timeline: Any, day_s: float) -> dict[str, list[int]]:
    """Per variant, the replicas asked for at each hour's start (for the plot and the table)."""
    out: dict[str, list[int]] = {}
    for variant in timeline.variants:
        points = timeline.points(variant)
        out[variant] = [next((p.asked for p in reversed(points) if p.at_s <= h * 3600.0), 0)
                        for h in range(int(day_s // 3600))]
    return out


def replay_days(spec: DaySpec, jobs: int = 1) -> list[dict[str, Any]]:
    """Every seed's day, in ``jobs`` worker processes (results identical to one)."""
    if jobs <= 1:
        return [replay_day(spec, k) for k in range(spec.seeds)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(replay_day, [spec] * spec.seeds, range(spec.seeds)))


def assemble(spec: DaySpec, days: Sequence[Mapping[str, Any]], command: str) -> dict[str, Any]:
    """The results file: the day's settings, each seed's day, and the means against the goals."""
    fixed_usd = statistics.fmean(d["fixed"]["usd"] for d in days)
    scaled_usd = statistics.fmean(d["autoscaled"]["fleet_usd"] for d in days)
    plan_usd = statistics.fmean(d["period_plan"]["usd"] for d in days)
    good = [d["autoscaled"]["good_fraction"] for d in days]
    return {
        "command": command,
        "replica_set": spec.replica_set, "trace": spec.trace, "policy": spec.policy, "target": spec.target,
        "peak_scale": spec.peak_scale, "peak_fleet": dict(spec.peak_fleet), "utilisation": dict(spec.utilisation),
        "curve": {"peak_to_trough": spec.curve.peak_to_trough, "trough_hour": spec.curve.trough_hour,
                  "mean_of_peak": round(spec.curve.mean, 4),
                  "source": "shape: SageServe (arXiv 2502.14617) daily cycle; depth: assumed"},
        "window": spec.window, "period_s": spec.period_s, "day_s": spec.day_s, "seeds": spec.seeds,
        "prior_error": spec.prior_error, "priors": f"the plan's draw (seed {spec.seed}) for every day seed",
        "startup_s": spec.startup_s,
        "autoscaling": {"scrape_interval_s": spec.scrape_s, "rate_window_s": spec.rate_window_s,
                        "scale_down_stabilization_s": spec.stabilization_s, "scale_up_stabilization_s": spec.scale_up_s,
                        "max_replicas": spec.max_replicas,
                        **({} if spec.scale_up_pods is None else {"scale_up_pods": spec.scale_up_pods,
                                                                  "scale_up_period_s": spec.scale_up_period_s})},
        "time": "virtual (the simulator's clock)",
        "layout": None if spec.layout is None else spec.layout.as_dict(),
        "roles": None if spec.layout is None or spec.layout.roles is None else spec.layout.roles.name,
        "warm_tasks": None if spec.warm_tasks is None else sorted(spec.warm_tasks),
        "capacity_by_variant": {v: {"intercept": c.intercept, "per_busy_replica": c.per_busy_replica}
                                for v, c in spec.capacity.items()},
        "days": list(days),
        "summary": {
            "fixed_usd": round(fixed_usd, 2), "autoscaled_usd": round(scaled_usd, 2), "period_plan_usd": round(plan_usd, 2),
            "autoscaled_vs_fixed": round(scaled_usd / fixed_usd, 4),
            "period_plan_vs_fixed": round(plan_usd / fixed_usd, 4),
            "fixed_good": None if not spec.replay_fixed else round(statistics.fmean(
                d["fixed"]["good_fraction"] for d in days), 4),
            "autoscaled_good": round(statistics.fmean(good), 4),
            "autoscaled_good_ci95": round(interval(good)[1], 4),
        },
    }
