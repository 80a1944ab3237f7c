"""The day-on-a-curve section: each goal met or missed from the results file alone."""

from __future__ import annotations

from typing import Any

from gateway.fleet.capacity.days import day_curve_render

TP4 = {"tp": 4, "chunk": None}


def day(autoscaled_usd: float = 730.0, good: float = 0.9921) -> dict[str, Any]:
    seed = {"seed": 0, "autoscaled": {"fleet_usd": autoscaled_usd, "good_fraction": good,
                                      "hourly_asked": {"standard": [0, 0], "fast": [2, 3]}}}
    return {
        "replica_set": "h100-70b", "trace": "code,conv", "policy": "duet", "target": 0.99, "peak_scale": 0.5,
        "peak_fleet": {"standard": 0, "fast": 4}, "layout": {"standard": TP4, "fast": TP4}, "roles": "split",
        "warm_tasks": ["chat", "coding"], "window": "heldout", "period_s": 900.0, "seeds": 3, "prior_error": 0.3,
        "priors": "the plan's draw", "startup_s": 346.0, "command": "duet plan-day --fit 0.333,0.5,1 ...",
        "curve": {"peak_to_trough": 3.0, "trough_hour": 4.0, "source": "assumed"},
        "autoscaling": {"scrape_interval_s": 15.0, "scale_up_stabilization_s": 600.0, "scale_down_stabilization_s": 300.0},
        "capacity_by_variant": {"fast": {"intercept": 0.6, "per_busy_replica": 28.0}},
        "capacity_fit": {"fit": "least squares", "points": [
            {"rate_scale": 0.25, "fleet": {"standard": 0, "fast": 2}, "share": 0.995, "busy_replicas": 0.05}]},
        "summary": {"autoscaled_usd": autoscaled_usd, "autoscaled_good": good, "autoscaled_good_ci95": 0.002,
                    "fixed_usd": 1152.0, "fixed_good": None, "period_plan_usd": 690.0,
                    "autoscaled_vs_fixed": round(autoscaled_usd / 1152.0, 4)},
        "against": {"all_standard_defaults": {"policy": "llm-d-default", "fleet": {"standard": 7, "fast": 0},
                                              "layout": {"standard": TP4}, "usd": 2016.0,
                                              "ratio": round(autoscaled_usd / 2016.0, 4), "good": 0.992,
                                              "good_on": "tuning seeds"},
                    "best_baseline": {"policy": "least-loaded", "fleet": {"standard": 0, "fast": 4},
                                      "layout": {"standard": TP4, "fast": TP4}, "usd": 1152.0,
                                      "ratio": round(autoscaled_usd / 1152.0, 4), "good": 0.997,
                                      "good_on": "held-out seeds"}},
        "days": [seed],
    }


def test_each_goal_is_met_or_missed_by_the_ratio_and_the_good_share():
    assert day_curve_render.verdicts(day()) == {"all_standard": False, "baseline": True, "good": True}
    assert day_curve_render.verdicts(day(autoscaled_usd=730.0 * 2, good=0.975)) == {
        "all_standard": False, "baseline": False, "good": False}


def test_the_section_names_the_comparators_the_curve_and_the_tuning_days():
    tuning = {**day(), "autoscaling": {"scale_up_stabilization_s": 0.0}}
    text = day_curve_render.render([day()], [tuning])
    assert ("- h100-70b: autoscaled $730, 0.36x all-standard TP4 (**missed**), 0.63x the best baseline (**met**), "
            "99.21% good (**met**).") in text
    assert "| all-standard TP4, vLLM's defaults, fixed at the peak: llm-d-default 7 standard TP4 (counted) | $2,016 |" in text
    assert "| x0.25 | 2 fast | 99.50% | 0.050 |" in text
    assert "Fitted: fast = +0.60 + 28.00 x busy." in text
    assert "| h100-70b | no floor, 0 s **(chosen)** | $730 | 99.21% | 3 |" in text
    assert "costs what the best baseline's does: the 37% saved against it is the autoscaling's" in text
    assert day_curve_render.render([]).endswith("(`duet plan-day --fit`).")


def test_an_autoscaled_day_dearer_than_the_peaks_fleet_is_not_called_a_saving():
    text = day_curve_render.render([day(autoscaled_usd=1843.2)])
    assert "the autoscaling on the curve costs 60% more than that fleet kept all day" in text
    assert "saved" not in text


def test_the_settings_are_the_cheapest_tuning_days_within_a_point_of_the_target():
    def tuning(window: float, usd: float, good: float, floor: dict[str, Any] | None = None) -> dict[str, Any]:
        return {**day(usd, good), "autoscaling": {"scale_up_stabilization_s": window}, "floor": floor}

    assert day_curve_render.chosen_settings([tuning(0, 800, 0.995), tuning(600, 700, 0.992)]) == {
        "h100-70b": "no floor, 600 s"}
    assert day_curve_render.chosen_settings([tuning(0, 800, 0.995), tuning(600, 700, 0.97)]) == {"h100-70b": "no floor, 0 s"}
    assert day_curve_render.chosen_settings([tuning(0, 800, 0.95), tuning(600, 700, 0.97)]) == {
        "h100-70b": "no floor, 600 s"}
    floored = tuning(300, 650, 0.985, {"days": 3, "margin": 1})
    assert day_curve_render.chosen_settings([tuning(0, 800, 0.995), floored]) == {"h100-70b": "floor of 3 days less 1, 300 s"}


def test_a_floor_is_said_with_where_it_was_learned_and_counted_alone():
    floored = {**day(), "floor": {"history": "the tuning window's days of seeds 1..3", "days": 3, "margin": 0,
                                  "lead_s": 660.0, "replica_hours": {"fast": 60.0}, "usd": 720.0}}
    text = day_curve_render.render([floored])
    assert ("a schedule floor (the gauge reports the higher of the two) learned from the tuning window's days of "
            "seeds 1..3") in text
    assert "each count asked for 660 s ahead (replica-hours it alone holds in a day: fast 60)" in text
    assert "| Duet, the schedule floor alone (counted) | $720 | 1.01x | — |" in text


def test_a_comparator_that_found_no_fleet_gives_a_bound_said_as_one():
    data = day()
    data["against"]["all_standard_defaults"].update(fleet=None, bound=True, usd_per_hour=120.0, usd=2880.0,
                                                    ratio=round(730.0 / 2880.0, 4), good=0.9805)
    text = day_curve_render.render([data])
    assert "≤ 0.25x all-standard TP4 (**met, a bound**)" in text
    assert "llm-d-default found none up to $120/hour (its largest fleet: 98.05% good, tuning seeds) | > $2,880 |" in text


def test_each_committed_held_out_day_runs_the_settings_its_tuning_days_chose():
    chosen = day_curve_render.chosen_settings(day_curve_render.load_tuning())
    for held_out in day_curve_render.load():
        assert day_curve_render.setting(held_out) == chosen[held_out["replica_set"]], held_out["replica_set"]
