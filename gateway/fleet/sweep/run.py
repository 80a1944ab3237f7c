"""Sweeps to the knee: a replica set x a trace x windows (seeds) x policies x loads, each replay
the real router against the simulator in virtual time (so the results do not depend on the
machine that ran them).

A load multiplies the trace's arrival rate over a fixed window of trace seconds (``windows.py``):
every load of a seed replays the same requests, in ``span / load`` seconds. A grid replays every
load; a search (``search.py``) replays the loads it needs to find where constraints stop holding.
One task is one policy on one seed, so ``jobs`` worker processes give the same results as one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from gateway.fleet.replay.report import summarize
from gateway.fleet.replay.request_result import RequestResult
from gateway.fleet.replay.setup import at_load, check_tasks, parse_cluster, policy_config, scrape_interval_s, window_arrivals
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.replay.windows import Window
from gateway.fleet.sweep import search as searching
from gateway.fleet.sweep.knee import Crossing, crossing
from gateway.fleet.sweep.sla import ConstraintSet, measure
from gateway.fleet.world.detections import unnamed
from gateway.fleet.world.policies import policy_name


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """What every replay of a sweep shares, but the policy, the seed and the load."""

    trace: str
    replicas: str
    policies: tuple[str, ...]
    window: Window
    seeds: int
    seed: int = 0
    prior_error: float = 0.3
    length_quantile: float = 0.5
    forced_length: bool = False
    unnamed_share: float = 0.0  # of requests naming no task (``ReplaySettings.unnamed_share``)
    keyed_tasks: tuple[str, ...] = ()  # whose unnamed requests come on a key naming their task


@dataclass(frozen=True, slots=True)
class Point:
    """One replay: a policy on a seed at a load."""

    load: float
    requests: int
    replay_s: float
    good_fraction: float
    slo_attainment: float
    rejected: int
    quality_misses: int
    cost_usd: float
    metrics: dict[str, float]  # the SLA keys asked for, ms (inf: a refused request ranked there)


@dataclass(frozen=True, slots=True)
class Task:
    """One policy on one seed: every load of a grid, or a search per constraint set."""

    spec: SweepSpec
    policy: str
    seed_index: int
    loads: tuple[float, ...] = ()
    bracket: searching.Bracket | None = None
    sets: tuple[ConstraintSet, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskResult:
    task: Task
    requests: int  # in the seed's window (the same at every load)
    points: tuple[Point, ...]  # in the order replayed
    searches: tuple[tuple[searching.Trial, ...], ...] = ()  # per constraint set, with --sweep-search


def run_tasks(tasks: Sequence[Task], jobs: int = 1) -> list[TaskResult]:
    """Every task's result, in the tasks' order, in ``jobs`` worker processes (1: this one)."""
    if jobs <= 1:
        return [run_task(task) for task in tasks]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(run_task, tasks))


def run_task(task: Task) -> TaskResult:
    """Replays the task's loads (a grid) or searches (one per constraint set, sharing replays)."""
    seed = SeedWindow.prepare(task.spec, task.policy, task.seed_index)
    keys = tuple(dict.fromkeys(k for s in task.sets for k in s.keys))
    done: dict[float, Point] = {}

    def at(load: float) -> Point:
        if load not in done:
            done[load] = seed.replay(load, keys)
        return done[load]

    for load in task.loads:
        at(load)
    bracket = task.bracket
    searches = () if bracket is None else tuple(_search(bracket, s, at) for s in task.sets)
    return TaskResult(task, len(seed.schedule), tuple(done.values()), searches)


def _search(bracket: searching.Bracket, constraint_set: ConstraintSet,
            at: Callable[[float], Point]) -> tuple[searching.Trial, ...]:
    trials: list[searching.Trial] = []
    while (load := searching.next_load(bracket, trials)) is not None:
        trials.append(trial(at(load), constraint_set))
    return tuple(trials)


def trial(point: Point, constraint_set: ConstraintSet) -> searching.Trial:
    metrics = {**point.metrics, "good_fraction": point.good_fraction}
    return searching.Trial(point.load, constraint_set.holds(metrics), constraint_set.margin(metrics))


@dataclass(frozen=True, slots=True)
class SeedWindow:
    """One policy on one seed's window, ready to replay at any load."""

    spec: SweepSpec
    policy: str
    seed: int
    cluster: Any
    config: Any
    schedule: tuple[Any, ...]  # the window's arrivals at load 1

    @classmethod
    def prepare(cls, spec: SweepSpec, policy: str, seed_index: int) -> SeedWindow:
        seed = spec.seed + seed_index
        cluster = parse_cluster(spec.replicas)
        config = policy_config(cluster, policy, cluster.prior_error(spec.prior_error, seed))
        schedule = window_arrivals(spec.trace.split(","), cluster, spec.window, seed_index)
        check_tasks(schedule, {policy: config})
        return cls(spec, policy, seed, cluster, config, schedule)

    def results(self, load: float) -> list[RequestResult]:
        """Every request of the window replayed at ``load``."""
        settings = ReplaySettings(self.seed, scrape_interval_s(self.policy), self.spec.forced_length,
                                  self.spec.length_quantile, **unnamed(self.spec.unnamed_share, self.spec.keyed_tasks))
        return Replay(self.config, self.cluster.profiles(), settings).run(at_load(self.schedule, load))

    def replay(self, load: float, keys: Sequence[str]) -> Point:
        results = self.results(load)
        duration = self.spec.window.span_s / load
        s = summarize(results, duration, self.cluster.parity)
        print(f"  {policy_name(self.policy)} seed {self.seed} x{load:g}: {s['good_fraction']:.2%} good", file=sys.stderr)
        return Point(load, s["requests"], round(duration, 3), s["good_fraction"], s["slo_attainment"], s["rejected"],
                     s["quality_misses"], s["cost_usd"], measure([k for k in keys if k != "good_fraction"], results,
                                                                 s["good_fraction"]))


def grid_crossing(points: Sequence[Point], level: float) -> Crossing:
    """Goodput at ``level`` good for one seed's grid."""
    return crossing([p.load for p in points], [p.good_fraction for p in points], level)

