"""The day's comparators from a plan's results: all-standard at vLLM's defaults and the best baseline."""

from __future__ import annotations

import pytest

from gateway.fleet.capacity.days import day_goals

TP4 = {"tp": 4, "chunk": None}
PLAN = {"plans": {
    "duet": {"role": "duet", "fleet": {"standard": 0, "fast": 3}, "usd_per_hour": 36.0, "search_share": 0.991},
    "least-loaded": {"role": "baseline", "fleet": {"standard": 0, "fast": 4}, "usd_per_hour": 48.0,
                     "search_share": 0.993, "check_share": 0.996, "layout": {"standard": TP4, "fast": TP4}},
    "static-split": {"role": "baseline", "fleet": None, "usd_per_hour": 240.0, "search_share": 0.95},
    "llm-d-default": {"role": "all-standard", "fleet": {"standard": 3, "fast": 0}, "usd_per_hour": 72.0,
                      "search_share": 0.992, "layouts": [
                          {"layout": {"standard": {"tp": 8, "chunk": None}}, "fleet": {"standard": 3, "fast": 0},
                           "usd_per_hour": 72.0, "share": 0.992, "searched": True},
                          {"layout": {"standard": TP4}, "fleet": {"standard": 7, "fast": 0}, "usd_per_hour": 84.0,
                           "share": 0.991, "searched": True}]},
}}


def test_the_all_standard_comparator_is_its_tp4_default_search_not_its_cheapest_layout():
    found = day_goals.comparators(PLAN)
    assert found["all_standard_defaults"] is not None
    assert (found["all_standard_defaults"]["fleet"], found["all_standard_defaults"]["usd_per_hour"]) == (
        {"standard": 7, "fast": 0}, 84.0)
    assert found["best_baseline"] is not None and found["best_baseline"]["policy"] == "least-loaded"


def test_each_comparator_costs_its_hourly_price_for_the_day_and_the_ratio_is_the_autoscaled_days_over_it():
    against = day_goals.against(600.0, 86400.0, day_goals.comparators(PLAN))
    assert against["all_standard_defaults"]["usd"] == pytest.approx(84.0 * 24)
    assert against["best_baseline"]["ratio"] == pytest.approx(600.0 / (48.0 * 24), abs=1e-4)
    assert day_goals.against(600.0, 86400.0, {"best_baseline": None}) == {"best_baseline": None}


def test_an_all_standard_search_that_found_no_fleet_is_a_lower_bound_on_its_cost():
    plan = {"plans": {"llm-d-default": {"role": "all-standard", "fleet": {"standard": 3, "fast": 0}, "layouts": [
        {"layout": {"standard": TP4}, "searched": True, "fleet": None, "usd_per_hour": 120.0, "share": 0.9805}]}}}
    found = day_goals.comparators(plan)["all_standard_defaults"]
    assert found is not None and found["bound"] and found["usd_per_hour"] == 120.0
    against = day_goals.against(800.0, 86400.0, {"all_standard_defaults": found})
    assert against["all_standard_defaults"]["ratio"] == pytest.approx(800.0 / 2880.0, abs=1e-4)  # at most this


TRAFFIC = {"replica_set": "h100-70b-w4a16", "trace": "code,conv", "rate_scale": 0.5, "target": 0.99, "seed": 0,
           "prior_error": 0.3, "length_quantile": 0.5, "search": {"name": "tuning", "seeds": 3},
           "check": {"name": "heldout", "seeds": 3}, "replica_usd_per_hour": {"standard": 12.0, "fast": 12.0}}
STOPPED_SHORT = {**TRAFFIC, "plans": {"llm-d-default": {"role": "all-standard", "fleet": None, "layouts": [
    {"layout": {"standard": TP4}, "searched": True, "fleet": None, "usd_per_hour": 120.0, "share": 0.9805}]},
    **{k: v for k, v in PLAN["plans"].items() if k == "least-loaded"}}}
FURTHER = {**TRAFFIC, "command": "duet plan --all-standard-max-replicas 40", "plans": {"llm-d-default": {
    "role": "all-standard", "fleet": {"standard": 28, "fast": 0}, "layouts": [
        {"layout": {"standard": TP4}, "searched": True, "fleet": {"standard": 28, "fast": 0}, "usd_per_hour": 336.0,
         "share": 0.9902}]}}}


def test_an_all_standard_fleet_searched_further_in_its_own_plan_replaces_the_bound():
    found = day_goals.comparators(STOPPED_SHORT, ("further.json", FURTHER))
    comparator = found["all_standard_defaults"]
    assert comparator is not None and not comparator["bound"] and comparator["usd_per_hour"] == 336.0
    assert comparator["plan"] == "further.json" and comparator["plan_command"] == FURTHER["command"]
    assert found["best_baseline"] is not None and found["best_baseline"]["policy"] == "least-loaded"  # the day's plan's


@pytest.mark.parametrize("key", ["trace", "rate_scale", "target", "search", "replica_usd_per_hour"])
def test_a_plan_on_other_traffic_is_no_comparator(key):
    other = {**FURTHER, key: "something else"}
    with pytest.raises(ValueError, match=key):
        day_goals.comparators(STOPPED_SHORT, ("other.json", other))
