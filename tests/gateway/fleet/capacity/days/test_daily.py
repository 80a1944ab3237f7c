"""A (short) day replayed three ways: the fixed peak fleet, the plan per period, the autoscaled fleet."""

import json

import pytest

from gateway.cli import main
from gateway.fleet.capacity.days.daily import DaySpec, assemble, replay_day
from gateway.fleet.capacity.days.day import DiurnalCurve

SPEC = DaySpec("h100-70b-w4a16", "code,conv,long-context=mooncake*0.1", 0.05, 0.99, "duet",
               {"standard": 1, "fast": 2}, {"standard": 0.2, "fast": 0.05}, DiurnalCurve(peak_to_trough=3.0),
               period_s=300.0, day_s=1800.0, seeds=1, startup_s=120.0)


@pytest.fixture(scope="module")
def day():
    return replay_day(SPEC, 0)


def test_the_fixed_fleet_pays_for_every_replica_all_day(day):
    assert day["fixed"]["replica_hours"] == pytest.approx(3 * 0.5)
    assert day["fixed"]["usd"] == pytest.approx(3 * 0.5 * 12.0)


def test_the_plan_per_period_keeps_the_parity_floor_and_prices_its_counts(day):
    counts = day["period_plan"]["counts"]
    assert len(counts) == 6
    assert all(c["standard"] >= 1 for c in counts)  # long documents have no other home on W4A16
    assert day["period_plan"]["usd"] == pytest.approx(sum(sum(c.values()) * 300 / 3600 * 12.0 for c in counts))


def test_the_autoscaled_fleet_is_billed_for_the_replicas_it_asked_for(day):
    scaled = day["autoscaled"]
    assert scaled["fleet_usd"] == pytest.approx(sum(scaled["replica_hours"].values()) * 12.0, rel=1e-3)
    assert 0 < scaled["good_fraction"] <= 1
    assert len(scaled["hourly_asked"]["standard"]) == 0 or all(n >= 1 for n in scaled["hourly_asked"]["standard"])


def test_the_summary_compares_with_the_fixed_fleet(day):
    results = assemble(SPEC, [day], "duet plan-day ...")
    s = results["summary"]
    assert s["autoscaled_vs_fixed"] == pytest.approx(day["autoscaled"]["fleet_usd"] / day["fixed"]["usd"], abs=1e-3)
    assert results["curve"]["mean_of_peak"] == pytest.approx(2 / 3, abs=1e-3)


def test_a_plan_without_a_fleet_is_refused_before_any_replay(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"replica_set": "h100-70b-w4a16", "trace": "code", "rate_scale": 0.5, "target": 0.99,
                                "policy": "duet", "prior_error": 0.3, "length_quantile": 0.5,
                                "plans": {"duet": {"fleet": None}}}))
    assert main(["plan-day", "--plan", str(plan)]) == 2
    assert "found no fleet" in capsys.readouterr().err


def test_a_day_on_a_capacity_curve_runs_the_plans_roles_and_keeps_warm_only_the_traffics_tasks():
    import dataclasses

    from gateway.autoscaling import CapacityCurve
    from gateway.fleet.capacity.layout import Deployment, Layout
    from gateway.fleet.capacity.roles import SPLIT

    curved = dataclasses.replace(
        SPEC, trace="code,conv", layout=Layout(Deployment(4), Deployment(4), SPLIT), replay_fixed=False,
        capacity={"fast": CapacityCurve(2.0, 0.0), "standard": CapacityCurve(-0.5, 0.0)},
        warm_tasks=frozenset({"chat", "coding"}))
    assert curved.policy_for({"standard": 0, "fast": 2}) == "duet@chunk=fast:1x8192+2048"
    day = replay_day(curved, 0)
    # the curve asks for two fast replicas whatever the load; no standard one is kept warm for long documents
    assert all(c == {"standard": 0, "fast": 2} for c in day["period_plan"]["counts"])
    assert day["fixed"]["good_fraction"] is None and 0 < day["autoscaled"]["good_fraction"] <= 1
    results = assemble(curved, [day], "duet plan-day ...")
    assert results["roles"] == "split" and results["warm_tasks"] == ["chat", "coding"]
    assert results["capacity_by_variant"]["fast"] == {"intercept": 2.0, "per_busy_replica": 0.0}
