"""Where an autoscaled day lost: good share by hour, the lost requests by why, the minutes a
role-mixed variant had too few decoders, and what the replica-hours paid for."""

from __future__ import annotations

import pytest

from gateway.autoscaling import CapacityCurve
from gateway.fleet.capacity.days.daily import DaySpec
from gateway.fleet.capacity.days.day import DiurnalCurve
from gateway.fleet.capacity.days.day_diagnosis import diagnose, good_by_hour, losses, paid_hours, thin_decode_minutes
from gateway.fleet.capacity.layout import Deployment, Layout
from gateway.fleet.capacity.roles import PD_SPLIT
from gateway.fleet.replay.fleet import FleetTimeline, ReplicaLife
from gateway.fleet.replay.request_result import RequestResult
from gateway.flow import Budget, EngineConfig, EngineRole, Replica

BUDGET = Budget(ttft_ms=1000.0, latency_ms=10_000.0)
PARITY = {"standard": None, "fast": frozenset({"chat"})}


def result(at_s: float, status: str = "ok", ttft_s: float = 0.5, e2e_s: float = 5.0, variant: str = "standard",
           task: str = "chat", refusal: int | None = None) -> RequestResult:
    return RequestResult(at_s, task, status, variant if status == "ok" else None, 100, 50, ttft_s, e2e_s,
                         budget=BUDGET, refusal_status=refusal)


RESULTS = [result(10.0), result(20.0, "rejected", refusal=503), result(3700.0), result(3710.0, ttft_s=2.0),
           result(3720.0, e2e_s=12.0), result(3730.0, variant="fast", task="coding")]


def test_the_good_share_is_counted_per_hour_of_arrival():
    assert good_by_hour(RESULTS, PARITY) == {0: 0.5, 1: 0.25}


def test_each_lost_request_is_counted_once_by_why():
    assert losses(RESULTS, PARITY) == {"refused 503": 1, "late first token": 1, "late after the first token": 1,
                                       "parity": 1}


def life(index: int, role: EngineRole, asked_s: float, ready_s: float, removed_s: float | None = None,
         left_s: float | None = None) -> ReplicaLife:
    replica = Replica(f"m/standard/{index}", "m", "standard", f"http://x/{index}", EngineConfig(role))
    return ReplicaLife(replica, asked_s, ready_s, removed_s, left_s)


def test_minutes_with_prefill_replicas_and_no_more_decoders_are_counted_by_what_was_ready():
    lives = (life(0, EngineRole.PREFILL, 0.0, 0.0), life(1, EngineRole.BOTH, 0.0, 0.0, removed_s=120.0, left_s=130.0),
             life(2, EngineRole.BOTH, 100.0, 300.0))
    thin = thin_decode_minutes(FleetTimeline(lives, 600.0), "standard")
    # minutes 0-1: one of each; 2-4: the prefill replica alone; 5-9: one of each again
    assert thin == {(1, 1): 7, (1, 0): 3}


def test_paid_hours_split_into_loading_serving_and_draining():
    lives = (life(0, EngineRole.BOTH, 0.0, 0.0, removed_s=1800.0, left_s=2700.0),
             life(1, EngineRole.BOTH, 0.0, 1800.0, removed_s=900.0, left_s=900.0),  # removed while loading
             life(2, EngineRole.BOTH, 0.0, 1800.0))
    paid = paid_hours(FleetTimeline(lives, 3600.0))
    assert (paid.loading, paid.serving, paid.draining) == pytest.approx((0.75, 1.0, 0.25))


@pytest.mark.parametrize("per_variant", [False, True])
def test_a_diagnosis_replays_one_seeds_autoscaled_day_as_the_day_would(per_variant):
    spec = DaySpec("h100-70b-w4a16", "code,conv", 0.05, 0.99, "duet", {"standard": 1, "fast": 2},
                   {"standard": 0.2, "fast": 0.05}, DiurnalCurve(peak_to_trough=3.0), period_s=300.0, day_s=1800.0,
                   seeds=1, startup_s=120.0, layout=Layout(Deployment(4), Deployment(4), PD_SPLIT), replay_fixed=False,
                   capacity={"fast": CapacityCurve(2.0, 0.0), "standard": CapacityCurve(3.0, 0.0)},
                   warm_tasks=frozenset({"chat", "coding"}), deployment_per_variant=per_variant)
    lines = diagnose(spec, 0)
    deploy = "one Deployment per variant" if per_variant else "one Deployment per engine group"
    assert lines[0].startswith(f"h100-70b-w4a16, seed 0 (heldout), {deploy}: ")
    assert lines[1].startswith("good by hour: 00h ") and lines[2].startswith("not good: ")
    assert lines[3].startswith("replica-hours: ")
