"""desired_replicas: the cost-first placement of each task's demand, the batch its TPOT budget
allows, the parity floor and the clamps."""

import dataclasses

import pytest

from gateway.cost import Price
from gateway.domain import Rollout, RolloutStage, Variant, VariantKind
from gateway.scaling import Autoscaling, TaskDemand, TaskSizing, desired_replicas
from gateway.scaling.desired import step_s
from gateway.speed import SpeedPrior

SPEED = SpeedPrior(prefill_tokens_per_s=10_000, decode_s_per_token=0.02, step_s_per_seq=0.0002, max_num_seqs=256)
STANDARD = Variant("m", "standard", VariantKind.FULL, "m-standard", 32768, True, Price(0.6, 1.2), SPEED)
FAST = Variant("m", "fast", VariantKind.QUANTIZED, "m-fast", 32768, True, Price(0.3, 0.6),
               dataclasses.replace(SPEED, decode_s_per_token=0.012), allowed_tasks=frozenset({"chat", "coding"}))
SIZING = {"chat": TaskSizing(50.0, 256), "coding": TaskSizing(50.0, 64), "reasoning": TaskSizing(None, 1024)}


def need(demand, variants=(STANDARD, FAST), **autoscaling):
    return desired_replicas(list(variants), demand, SIZING, Autoscaling(**autoscaling))


def test_what_parity_allows_goes_to_the_cheaper_variant_and_the_rest_to_standard():
    needs = need({"chat": TaskDemand(20, 1000, 200), "reasoning": TaskDemand(1, 500, 1000)})
    assert dict(needs["fast"].tasks) == {"chat": 1.0}
    assert dict(needs["standard"].tasks) == {"reasoning": 1.0}


def test_the_count_is_the_busy_replicas_over_the_utilisation_rounded_up():
    # chat on fast: batch where TPOT 50 ms holds: 0.012 + 0.0002 B <= 0.05 -> B = 190.
    needs = need({"chat": TaskDemand(20, 2000, 200)}, utilisation=0.5)
    fast = needs["fast"]
    assert fast.batch == 190
    per_request = 2000 / 10_000 + 200 * step_s(FAST.speed, 190, 2100) / 190
    assert fast.busy_replicas == pytest.approx(20 * per_request)
    assert fast.desired == 11  # 5.05 busy replicas at half their capacity: 10.1, rounded up


def test_twice_the_rate_asks_for_about_twice_the_replicas():
    one = need({"chat": TaskDemand(40, 2000, 200)}, utilisation=0.5, max_replicas=100)["fast"]
    two = need({"chat": TaskDemand(80, 2000, 200)}, utilisation=0.5, max_replicas=100)["fast"]
    assert one.desired >= 3
    assert two.busy_replicas == pytest.approx(2 * one.busy_replicas)
    assert two.desired in (2 * one.desired - 1, 2 * one.desired)


@pytest.mark.parametrize("demand", [{}, {"chat": TaskDemand(0.01, 100, 10)}])
def test_standard_keeps_one_replica_while_it_is_the_only_home_of_a_configured_task(demand):
    needs = need(demand)
    assert needs["standard"].floor == 1 and needs["standard"].desired == 1
    assert needs["fast"].floor == 0


def test_no_parity_floor_when_every_task_has_two_homes_but_min_replicas_still_holds():
    everything = dataclasses.replace(FAST, allowed_tasks=None)
    needs = need({}, variants=(STANDARD, everything), min_replicas={"fast": 2})
    assert needs["standard"].desired == 0
    assert needs["fast"].desired == 2


def test_max_replicas_caps_the_count_but_never_the_floor():
    needs = need({"chat": TaskDemand(1000, 4000, 500)}, max_replicas=3)
    assert needs["fast"].desired == 3


def test_a_canary_takes_its_share_before_the_cheapest_variant_takes_the_rest():
    canary = dataclasses.replace(FAST, rollout=Rollout(RolloutStage.CANARY, (("chat", 0.25),)))
    needs = need({"chat": TaskDemand(10, 1000, 100)}, variants=(STANDARD, canary))
    assert dict(needs["fast"].tasks) == {"chat": 0.25}
    assert dict(needs["standard"].tasks) == {"chat": 0.75}


def test_a_budget_no_batch_meets_is_sized_at_batch_one():
    slow = dataclasses.replace(FAST, speed=dataclasses.replace(FAST.speed, decode_s_per_token=0.08))
    assert need({"chat": TaskDemand(1, 100, 100)}, variants=(STANDARD, slow))["fast"].batch == 1


def test_a_variant_of_its_own_utilisation_is_sized_by_it():
    demand = {"chat": TaskDemand(20, 2000, 200)}
    model_wide = need(demand, utilisation=0.5)["fast"]
    own = need(demand, utilisation=0.5, utilisation_by_variant={"fast": 0.25}, max_replicas=100)["fast"]
    assert own.busy_replicas == model_wide.busy_replicas
    assert own.desired == 21  # 5.05 busy replicas at a quarter of their capacity


def test_a_variant_with_a_capacity_curve_is_sized_on_the_models_busy_replicas_not_its_utilisation():
    from gateway.scaling import CapacityCurve

    demand = {"chat": TaskDemand(20, 2000, 200), "reasoning": TaskDemand(1, 500, 1000)}
    plain = need(demand, utilisation=0.5)
    busy = plain["fast"].busy_replicas + plain["standard"].busy_replicas
    curves = {"fast": CapacityCurve(1.0, 2.0), "standard": CapacityCurve(0.0, 0.0)}
    needs = need(demand, utilisation=0.5, capacity_by_variant=curves)
    assert needs["fast"].desired == -(-(1.0 + 2.0 * busy) // 1) != plain["fast"].desired
    assert needs["standard"].desired == 1  # the curve asks for none; parity's floor keeps one
    assert needs["fast"].busy_replicas == plain["fast"].busy_replicas  # the arithmetic is unchanged


def test_warm_tasks_keep_a_replica_only_for_the_task_types_they_name():
    assert need({})["standard"].desired == 1  # reasoning: standard its only home, configured
    assert need({}, warm_tasks=frozenset({"chat", "coding"}))["standard"].desired == 0
    assert need({}, warm_tasks=frozenset({"reasoning"}))["standard"].desired == 1


def test_a_schedule_floors_the_count_at_its_time_of_day_and_only_when_a_time_is_given():
    from gateway.scaling import FloorSchedule, ScheduleStep

    demand = {"chat": TaskDemand(20, 2000, 200)}
    schedule = {"fast": FloorSchedule((ScheduleStep(0.0, 0), ScheduleStep(8 * 3600.0, 30)))}
    settings = Autoscaling(utilisation=0.5, schedule_by_variant=schedule)
    at = {when: desired_replicas([STANDARD, FAST], demand, SIZING, settings, when)["fast"] for when in (None, 3600.0, 9 * 3600.0)}
    assert at[None].desired == at[3600.0].desired == 11  # the reactive count (see above)
    assert (at[9 * 3600.0].desired, at[9 * 3600.0].floor) == (30, 30)  # the schedule's, above it
    assert at[None].floor == 0  # no time, no schedule: the Deployment's static floor
