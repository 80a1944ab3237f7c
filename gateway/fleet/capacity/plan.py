"""The replays behind ``duet plan``: for each policy, the search (``search.py``) over fleets of
one replica set, each fleet replayed on the same seeds of the tuning window, then the fleet it
found replayed on the held-out window's seeds.

A seed is as in ``duet replay --sweep``: seed ``k`` replays the window shifted by ``k x shift``
trace seconds, with engines jittered and the speed priors' error drawn by seed ``k``; every
fleet of a search sees exactly those arrivals and errors, so two fleets differ only in their
counts. A fleet's good share is the mean over its seeds. One task is one policy (its search and
its check), so ``jobs`` worker processes give the same results as one.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from gateway.fleet.capacity.headroom import fleet_utilisation, traffic_demand
from gateway.fleet.capacity.search import Bounds, Fleet, Found, cheapest
from gateway.fleet.replay.report import summarize
from gateway.fleet.replay.seeds import interval
from gateway.fleet.replay.setup import Cluster, at_load, check_tasks, policy_config, scrape_interval_s, window_arrivals
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.replay.windows import Window
from gateway.fleet.workload.traces import Arrival
from gateway.fleet.world.prior_error import PriorError
from gateway.fleet.world.replica_sets import REPLICA_SETS, ReplicaSet


@dataclass(frozen=True, slots=True)
class PlanSpec:
    """What every replay of a plan shares but the policy, the fleet and the seed."""

    trace: str
    replica_set: str
    target: float
    rate_scale: float
    search: Window
    search_seeds: int
    check: Window
    check_seeds: int
    max_replicas: int
    seed: int = 0
    prior_error: float = 0.3
    length_quantile: float = 0.5

    @property
    def replicas(self) -> ReplicaSet:
        return REPLICA_SETS[self.replica_set]


@dataclass(frozen=True, slots=True)
class PolicyPlan:
    """One policy's cheapest fleet: the search's answer on the tuning seeds and, when it found a
    fleet, that fleet's good share on each held-out seed."""

    policy: str
    standard_only: bool
    floor: int
    found: Found
    check_shares: tuple[float, ...]
    search_s: float
    check_s: float
    # variant -> the share of its replicas' capacity the found fleet uses, as the gauge counts it
    # (``headroom.py``; empty when no fleet was found).
    utilisation: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Seed:
    seed: int
    prior_error: PriorError
    schedule: tuple[Arrival, ...]  # at the plan's rate scale


class Replays:
    """One policy on one window's seeds, ready to replay any fleet of the replica set."""

    def __init__(self, spec: PlanSpec, policy: str, window: Window, seeds: int) -> None:
        self._spec, self._policy = spec, policy
        cluster = Cluster(spec.replicas, {v.name: 1 for v in spec.replicas.variants})
        self._seeds = tuple(self._prepare(cluster, window, k) for k in range(seeds))
        self._duration_s = window.span_s / spec.rate_scale
        self._scrape_s = scrape_interval_s(policy)

    def _prepare(self, cluster: Cluster, window: Window, index: int) -> _Seed:
        spec = self._spec
        seed = spec.seed + index
        prior_error = cluster.prior_error(spec.prior_error, seed)
        # The window's requests at load 1, then sped up: a plan at any rate scale replays the same requests.
        at_one = window_arrivals(spec.trace.split(","), cluster, window, index)
        check_tasks(at_one, {self._policy: policy_config(cluster, self._policy, prior_error)})
        return _Seed(seed, prior_error, at_load(at_one, spec.rate_scale))

    @property
    def tasks(self) -> frozenset[str]:
        return frozenset(a.task for s in self._seeds for a in s.schedule)

    def shares(self, fleet: Fleet) -> tuple[float, ...]:
        """The fleet's good share on each seed (0 for a fleet without replicas)."""
        if fleet.replicas == 0:
            return tuple(0.0 for _ in self._seeds)
        cluster = Cluster(self._spec.replicas, fleet.counts)
        return tuple(self._replay(cluster, seed) for seed in self._seeds)

    def utilisation(self, fleet: Fleet) -> dict[str, float]:
        """The fleet's utilisation in the gauge's terms: these seeds' traffic, the first seed's priors."""
        config = policy_config(Cluster(self._spec.replicas, fleet.counts), self._policy, self._seeds[0].prior_error)
        return fleet_utilisation(config, traffic_demand([s.schedule for s in self._seeds], self._duration_s), fleet)

    def share(self, fleet: Fleet) -> float:
        """The mean good share over the seeds, in [0, 1]."""
        return round(statistics.fmean(self.shares(fleet)), 4)

    def _replay(self, cluster: Cluster, seed: _Seed) -> float:
        config = policy_config(cluster, self._policy, seed.prior_error)
        settings = ReplaySettings(seed.seed, self._scrape_s, length_quantile=self._spec.length_quantile)
        results = Replay(config, cluster.profiles(), settings).run(seed.schedule)
        return float(summarize(results, self._duration_s, cluster.parity)["good_fraction"])


def fleet_usd_per_hour(replica_set: ReplicaSet, fleet: Fleet) -> float:
    """What the fleet costs per hour, busy or idle (``ReplicaSet.fleet_usd``); a replica set
    without replica costs (a test set) counts replicas instead."""
    usd = replica_set.fleet_usd(fleet.counts, 3600.0)
    return float(fleet.replicas) if usd is None else usd


def parity_floor(replica_set: ReplicaSet, tasks: frozenset[str]) -> int:
    """1 when the fast variant's parity refuses a task of the traffic (someone must serve it), else 0."""
    allowed = replica_set.parity["fast"]
    return 0 if allowed is None or tasks <= allowed else 1


def plan_policy(spec: PlanSpec, policy: str, standard_only: bool = False) -> PolicyPlan:
    """``policy``'s cheapest fleet meeting ``spec.target`` on the tuning seeds, checked on the held-out ones."""
    started = time.perf_counter()
    tuning = Replays(spec, policy, spec.search, spec.search_seeds)
    floor = parity_floor(spec.replicas, tuning.tasks)
    bounds = Bounds(spec.max_replicas, 0 if standard_only else spec.max_replicas,
                    max(floor, 1) if standard_only else floor)

    def evaluate(fleet: Fleet) -> float:
        share = tuning.share(fleet)
        print(f"  {policy} {fleet}: {share:.2%} good", file=sys.stderr)
        return share

    found = cheapest(evaluate, lambda f: fleet_usd_per_hour(spec.replicas, f), spec.target, bounds)
    searched = time.perf_counter()
    shares: tuple[float, ...] = ()
    utilisation: dict[str, float] = {}
    if found.fleet is not None:
        utilisation = tuning.utilisation(found.fleet)
        shares = Replays(spec, policy, spec.check, spec.check_seeds).shares(found.fleet)
        print(f"  {policy} {found.fleet} held out: {interval(shares)[0]:.2%} good", file=sys.stderr)
    return PolicyPlan(policy, standard_only, floor, found, shares, round(searched - started, 1),
                      round(time.perf_counter() - searched, 1), utilisation)


def plan_all(spec: PlanSpec, policies: Sequence[tuple[str, bool]], jobs: int = 1) -> list[PolicyPlan]:
    """Each (policy, standard only) planned, in order, in ``jobs`` worker processes (1: this one)."""
    if jobs <= 1:
        return [plan_policy(spec, p, s) for p, s in policies]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(plan_policy, spec, p, s) for p, s in policies]
        return [f.result() for f in futures]
