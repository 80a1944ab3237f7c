"""The day section: the goals judged from the summary, the table and the hourly fleet."""

from gateway.fleet.capacity.days.day_render import meets, render
from loadtests.sections.headlines import capacity_day as headline


def day(ratio, good):
    return {"replica_set": "h100-70b-w4a16", "trace": "code", "policy": "duet", "target": 0.99, "peak_scale": 0.5,
            "peak_fleet": {"standard": 1, "fast": 6}, "utilisation": {"fast": 0.05},
            "curve": {"peak_to_trough": 3.0, "trough_hour": 4.0, "mean_of_peak": 0.667, "source": "assumed"},
            "window": "heldout", "period_s": 900.0, "seeds": 1, "prior_error": 0.3, "startup_s": 346.0,
            "autoscaling": {"scrape_interval_s": 15.0, "rate_window_s": 120.0, "scale_up_stabilization_s": 0.0,
                            "scale_down_stabilization_s": 300.0},
            "command": "duet plan-day --plan p.json",
            "days": [{"seed": 0, "fixed": {"replica_hours": 168.0, "usd": 2016.0, "good_fraction": 0.998},
                      "period_plan": {"replica_hours": 100.0},
                      "autoscaled": {"replica_hours": {"standard": 24.0, "fast": 90.0}, "fleet_usd": 1368.0,
                                     "good_fraction": 0.985,
                                     "hourly_asked": {"standard": [1, 1], "fast": [2, 7]}}}],
            "summary": {"fixed_usd": 2016.0, "autoscaled_usd": 1368.0, "period_plan_usd": 1200.0,
                        "autoscaled_vs_fixed": ratio, "period_plan_vs_fixed": 0.6, "fixed_good": 0.998,
                        "autoscaled_good": good, "autoscaled_good_ci95": 0.001}}


def test_both_goals_must_hold():
    assert meets(day(0.68, 0.985)) == (True, True)
    assert meets(day(0.71, 0.999)) == (False, True)
    assert meets(day(0.5, 0.979)) == (True, False)
    assert headline([day(0.68, 0.985)]).met is True
    assert headline([day(0.68, 0.985), day(0.75, 0.99)]).met is False


def test_the_section_shows_the_three_fleets_and_the_hourly_counts():
    text = render([day(0.68, 0.985)])
    assert "| fixed, sized for the peak (1+6) | 168.0 | $2,016 | 1.00x | 99.80% |" in text
    assert "0.68x the peak's fixed fleet (**met**)" in text
    assert "00h 1+2, 01h 1+7" in text
    assert "seed 0: 0.68x, 98.50% good (fixed: 99.80%)" in text
    assert render([]).endswith("No day replayed yet (`duet plan-day`).")
