"""``plan_policy`` over layouts, with the replays replaced by a capacity model: Duet may pick each
variant's TP size, a baseline one configuration for all its replicas, and the cheapest wins."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gateway.fleet.capacity import plan as plan_module
from gateway.fleet.capacity.layout import Deployment, Layout, LayoutSpace
from gateway.fleet.capacity.plan import PlanSpec, plan_policy
from gateway.fleet.capacity.roles import SPLIT
from gateway.fleet.capacity.search import Fleet
from gateway.fleet.replay.windows import HELDOUT, TUNING
from gateway.fleet.world.replica_sets import ReplicaSet

# Requests per second one replica serves well, by its profile: a fast W4A16 replica on one GPU
# serves a third of one on four for a quarter of the price; bf16 standard on four serves less.
CAPACITY = {"h100-70b-w4a16-tp1": 1.0, "h100-70b-w4a16-tp2": 1.8, "h100-70b-w4a16": 3.0, "h100-70b-bf16": 2.5}
DEMAND = 10.0


class CapacityReplays:
    """Stands in for ``plan.Replays``: a fleet's good share is its capacity over the demand."""

    evaluated: list[tuple[str, Fleet]] = []

    def __init__(self, spec: PlanSpec, policy: str, window: Any, seeds: int) -> None:
        self.seeds = seeds

    tasks = frozenset({"chat"})

    def share(self, fleet: Fleet, replicas: ReplicaSet | None = None, layout: Layout | None = None) -> float:
        assert replicas is not None
        profiles = {v.name: v.profile.removesuffix("-tp4") for v in replicas.variants}  # TP4: the profile as shipped
        self.evaluated.append((profiles["fast"], fleet))
        capacity = sum(CAPACITY[profiles[name]] * n for name, n in fleet.counts.items())
        # engine roles, where their rule applies to the fleet, serve a fifth more on the same GPUs
        roles = 1.2 if layout is not None and layout.suffix(fleet.counts) else 1.0
        return min(1.0, roles * capacity / DEMAND)

    def shares(self, fleet: Fleet, replicas: ReplicaSet | None = None,
               layout: Layout | None = None) -> tuple[float, ...]:
        return tuple(self.share(fleet, replicas, layout) for _ in range(self.seeds))

    def utilisation(self, fleet: Fleet, replicas: ReplicaSet | None = None) -> dict[str, float]:
        return {}


@pytest.fixture
def spec(monkeypatch: pytest.MonkeyPatch) -> PlanSpec:
    monkeypatch.setattr(plan_module, "Replays", CapacityReplays)
    CapacityReplays.evaluated = []
    layouts = LayoutSpace({"standard": (4,), "fast": (1, 2, 4)}, {"standard": (None,), "fast": (None,)})
    return PlanSpec("code", "h100-70b-w4a16", 0.99, 1.0, TUNING, 1, HELDOUT, 2, 12, layouts=layouts)


def test_duet_chooses_each_variants_tp_size_and_the_cheapest_layout_wins(spec: PlanSpec) -> None:
    plan = plan_policy(spec, "duet", "duet")
    assert plan.layout == Layout(Deployment(4), Deployment(1))
    assert plan.found.fleet == Fleet(0, 10) and plan.found.cost == 30.0  # ten one-GPU replicas at $3
    assert plan.check_shares == (1.0, 1.0)
    assert [s.layout.fast for s in plan.searches] == [Deployment(4), Deployment(1), Deployment(2)]


def test_a_baseline_gets_one_configuration_for_all_its_replicas(spec: PlanSpec) -> None:
    plan = plan_policy(spec, "least-loaded", "baseline")
    assert [s.layout for s in plan.searches] == [Layout(Deployment(4), Deployment(4))]
    assert plan.found.fleet == Fleet(0, 4) and plan.found.cost == 48.0


def test_all_standard_sizes_the_standard_variant_alone(spec: PlanSpec) -> None:
    plan = plan_policy(spec, "always-standard", "all-standard")
    assert plan.found.fleet == Fleet(4, 0) and plan.layout == Layout(Deployment(4), None)


def test_the_all_standard_fleet_has_its_own_bound_and_the_others_keep_theirs(spec: PlanSpec) -> None:
    # bf16 on four GPUs serves 2.5 of a demand of 10: four replicas, beyond a bound of three
    tight = dataclasses.replace(spec, max_replicas=3)
    assert plan_policy(tight, "always-standard", "all-standard").found.fleet is None
    own = dataclasses.replace(tight, all_standard_max_replicas=5)
    assert plan_policy(own, "always-standard", "all-standard").found.fleet == Fleet(4, 0)
    CapacityReplays.evaluated = []
    plan_policy(own, "least-loaded", "baseline")  # a mixed fleet's search stays within three per variant
    assert CapacityReplays.evaluated and max(max(f.standard, f.fast) for _, f in CapacityReplays.evaluated) <= 3


def test_a_layout_searched_later_is_capped_at_the_cheapest_fleet_so_far(spec: PlanSpec) -> None:
    plan_policy(spec, "duet", "duet")
    # once TP1 found $30, no TP2 fleet tried costs more than that: at most five $6 replicas
    tp2 = [fleet for profile, fleet in CapacityReplays.evaluated if profile.endswith("-tp2")]
    assert tp2 and max(f.fast for f in tp2) <= 5 and max(f.standard for f in tp2) <= 2


def test_duet_takes_a_role_mix_where_it_is_cheaper_and_a_baseline_never_gets_one(spec: PlanSpec) -> None:
    roles = LayoutSpace({"standard": (4,), "fast": (4,)}, {"standard": (None,), "fast": (None,)}, (SPLIT,))
    with_roles = dataclasses.replace(spec, layouts=roles)
    plan = plan_policy(with_roles, "duet", "duet")
    # uniform: four $12 fast replicas (3 x 3.0 misses 10); split: three serve 3 x 3.0 x 1.2 = 10.8
    assert plan.layout == Layout(Deployment(4), Deployment(4), SPLIT) and plan.found.fleet == Fleet(0, 3)
    assert [s.layout.roles for s in plan.searches] == [None, SPLIT]
    baseline = plan_policy(with_roles, "least-loaded", "baseline")
    assert all(s.layout.roles is None for s in baseline.searches) and baseline.found.fleet == Fleet(0, 4)
