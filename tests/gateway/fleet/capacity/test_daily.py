"""A (short) day replayed three ways: the fixed peak fleet, the plan per period, the autoscaled fleet."""

import json

import pytest

from gateway.cli import main
from gateway.fleet.capacity.daily import DaySpec, assemble, replay_day
from gateway.fleet.capacity.day import DiurnalCurve

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
