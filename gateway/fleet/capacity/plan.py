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

from gateway.fleet.capacity.headroom import busy_replicas, fleet_utilisation, traffic_demand
from gateway.fleet.capacity.layout import Layout, LayoutSpace, laid_out, layouts_for, own_layout, own_tp
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
    # The TP sizes and chunk budgets each variant may take (None: the profiles' own only).
    layouts: LayoutSpace | None = None
    # The all-standard fleet's own bound (None: ``max_replicas``): a standard-only fleet on vLLM's
    # defaults may need many more replicas than the mixed fleets to meet a latency target, and a
    # comparator found nowhere within the bound is only a lower bound on its cost.
    all_standard_max_replicas: int | None = None

    def max_replicas_for(self, standard_only: bool) -> int:
        """The most replicas' worth per variant a role's search may try."""
        if standard_only and self.all_standard_max_replicas is not None:
            return self.all_standard_max_replicas
        return self.max_replicas

    @property
    def replicas(self) -> ReplicaSet:
        return REPLICA_SETS[self.replica_set]

    @property
    def space(self) -> LayoutSpace:
        own = own_layout(self.replicas)
        return self.layouts or LayoutSpace({n: (d.tp,) for n, d in own.deployments.items()},
                                           {n: (None,) for n in own.deployments})


@dataclass(frozen=True, slots=True)
class LayoutSearch:
    """One layout's search: its cheapest fleet (``found``), or None when it was not searched
    because even its largest fleet under the cap (the best cost found so far) was no fleet."""

    layout: Layout
    found: Found | None
    tried_usd: tuple[float, ...] = ()  # what each fleet of ``found.tried`` costs per hour, in order


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
    # The layout of ``found`` (the cheapest over every layout searched), and each layout's search.
    layout: Layout | None = None
    searches: tuple[LayoutSearch, ...] = ()
    role: str = "duet"


@dataclass(frozen=True, slots=True)
class _Seed:
    seed: int
    prior_error: PriorError
    schedule: tuple[Arrival, ...]  # at the plan's rate scale


class Replays:
    """One policy on one window's seeds, ready to replay any fleet of the replica set. A fleet
    replayed twice with the same profiles and engine roles is replayed once (two role mixes lay
    the same roles over a fleet too small for their difference)."""

    def __init__(self, spec: PlanSpec, policy: str, window: Window, seeds: int) -> None:
        self._spec, self._policy = spec, policy
        self._known: dict[tuple[object, ...], tuple[float, ...]] = {}
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

    def shares(self, fleet: Fleet, replicas: ReplicaSet | None = None, layout: Layout | None = None) -> tuple[float, ...]:
        """The fleet's good share on each seed (0 for a fleet without replicas), its replicas
        those of ``replicas`` (None: the plan's set as its profiles are) in ``layout``'s engine
        roles (None: none)."""
        if fleet.replicas == 0:
            return tuple(0.0 for _ in self._seeds)
        cluster = Cluster(replicas or self._spec.replicas, fleet.counts)
        policy = self._policy + ("" if layout is None else layout.suffix(fleet.counts))
        key = (policy, fleet, tuple((v.name, v.profile, v.max_num_batched_tokens) for v in cluster.replica_set.variants))
        if key not in self._known:
            self._known[key] = tuple(self._replay(cluster, seed, policy) for seed in self._seeds)
        return self._known[key]

    def utilisation(self, fleet: Fleet, replicas: ReplicaSet | None = None) -> dict[str, float]:
        """The fleet's utilisation in the gauge's terms: these seeds' traffic, the first seed's priors."""
        cluster = Cluster(replicas or self._spec.replicas, fleet.counts)
        config = policy_config(cluster, self._policy, self._seeds[0].prior_error)
        return fleet_utilisation(config, traffic_demand([s.schedule for s in self._seeds], self._duration_s), fleet)

    def busy_replicas(self, replicas: ReplicaSet | None = None) -> dict[str, float]:
        """variant -> the replicas these seeds' traffic keeps fully busy on it, in the gauge's
        arithmetic (``headroom.busy_replicas``; the first seed's priors)."""
        cluster = Cluster(replicas or self._spec.replicas, {v.name: 1 for v in self._spec.replicas.variants})
        config = policy_config(cluster, self._policy, self._seeds[0].prior_error)
        return busy_replicas(config, traffic_demand([s.schedule for s in self._seeds], self._duration_s))

    def share(self, fleet: Fleet, replicas: ReplicaSet | None = None, layout: Layout | None = None) -> float:
        """The mean good share over the seeds, in [0, 1]."""
        return round(statistics.fmean(self.shares(fleet, replicas, layout)), 4)

    def _replay(self, cluster: Cluster, seed: _Seed, policy: str) -> float:
        config = policy_config(cluster, policy, seed.prior_error)
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


def layout_bounds(spec: PlanSpec, replicas: ReplicaSet, layout: Layout, floor: int,
                  cap_usd: float | None, standard_only: bool = False) -> Bounds | None:
    """The counts one layout's search may try: up to ``max_replicas`` replicas' worth of the
    profile's own GPUs per variant, none past what alone costs ``cap_usd`` (the cheapest fleet of
    the layouts searched before; a fleet dearer than it cannot win). None: no fleet left to try."""
    limits = {}
    for name, deployment in layout.deployments.items():
        most = spec.max_replicas_for(standard_only) * own_tp(spec.replicas, name) // deployment.tp
        one = fleet_usd_per_hour(replicas, Fleet(**{"standard": 0, "fast": 0, name: 1}))
        limits[name] = most if cap_usd is None else min(most, int(cap_usd / one + 1e-9))
    standard, fast = limits["standard"], limits.get("fast", 0)
    if floor > standard or standard + fast < 1:
        return None
    return Bounds(standard, fast, floor)


def plan_policy(spec: PlanSpec, policy: str, role: str = "duet") -> PolicyPlan:
    """``policy``'s cheapest fleet meeting ``spec.target`` on the tuning seeds over the layouts its
    ``role`` may try (``layout.layouts_for``), checked on the held-out ones."""
    started = time.perf_counter()
    standard_only = role == "all-standard"
    tuning = Replays(spec, policy, spec.search, spec.search_seeds)
    floor = parity_floor(spec.replicas, tuning.tasks)
    floor = max(floor, 1) if standard_only else floor
    searches: list[LayoutSearch] = []
    best: tuple[Layout, ReplicaSet, Found] | None = None
    for layout in layouts_for(role, spec.space, own_layout(spec.replicas)):
        replicas = laid_out(spec.replicas, layout)
        bounds = layout_bounds(spec, replicas, layout, floor, None if best is None else best[2].cost, standard_only)
        found = None if bounds is None else _search(spec, tuning, policy, layout, replicas, bounds)
        costs = () if found is None else tuple(fleet_usd_per_hour(replicas, f) for f, _ in found.tried)
        searches.append(LayoutSearch(layout, found, costs))
        if found is not None and found.fleet is not None and (
                best is None or (found.cost, -found.share) < (best[2].cost, -best[2].share)):
            best = (layout, replicas, found)
    searched = time.perf_counter()
    if best is None:  # no layout met the target: report the first (the profiles' own) one's largest fleet
        first = next(s for s in searches if s.found is not None)
        assert first.found is not None
        return PolicyPlan(policy, standard_only, floor, first.found, (), round(searched - started, 1), 0.0,
                          layout=first.layout, searches=tuple(searches), role=role)
    layout, replicas, found = best
    assert found.fleet is not None
    utilisation = tuning.utilisation(found.fleet, replicas)
    shares = Replays(spec, policy, spec.check, spec.check_seeds).shares(found.fleet, replicas, layout)
    print(f"  {policy} [{layout}] {found.fleet} held out: {interval(shares)[0]:.2%} good", file=sys.stderr)
    return PolicyPlan(policy, standard_only, floor, found, shares, round(searched - started, 1),
                      round(time.perf_counter() - searched, 1), utilisation, layout, tuple(searches), role)


def _search(spec: PlanSpec, tuning: Replays, policy: str, layout: Layout, replicas: ReplicaSet,
            bounds: Bounds) -> Found:
    def evaluate(fleet: Fleet) -> float:
        share = tuning.share(fleet, replicas, layout)
        print(f"  {policy} [{layout}] {fleet}: {share:.2%} good", file=sys.stderr)
        return share

    return cheapest(evaluate, lambda f: fleet_usd_per_hour(replicas, f), spec.target, bounds)


def plan_all(spec: PlanSpec, policies: Sequence[tuple[str, str]], jobs: int = 1) -> list[PolicyPlan]:
    """Each (policy, role) planned, in order, in ``jobs`` worker processes (1: this one)."""
    if jobs <= 1:
        return [plan_policy(spec, p, s) for p, s in policies]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(plan_policy, spec, p, s) for p, s in policies]
        return [f.result() for f in futures]
