"""The "A day, autoscaled" section of docs/benchmarks.md, from the committed day replays
(``docs/results/capacity/day/*.json``, written by ``duet plan-day``): per replica set, the fleet
sized for the peak kept all day, the plan per period, and the fleet the gauge scaled, with what
each cost and the good requests it served, against issue #27's goals."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[4] / "docs" / "results" / "capacity" / "day"
COST_GOAL = 0.7  # the autoscaled day's cost at most this share of the peak-sized fixed fleet's
GOOD_POINTS = 1.0  # and its good requests within this many points of the plan's target (or above)
Day = Mapping[str, Any]


def load(directory: Path = RESULTS) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def meets(day: Day) -> tuple[bool, bool]:
    """(cost goal met, good-share goal met)."""
    s = day["summary"]
    return s["autoscaled_vs_fixed"] <= COST_GOAL, s["autoscaled_good"] * 100 >= day["target"] * 100 - GOOD_POINTS


def _fleet(counts: Mapping[str, int]) -> str:
    return f"{counts.get('standard', 0)}+{counts.get('fast', 0)}"


HEADING = "## A day, autoscaled (`duet plan-day`)"


def render(days: Sequence[Day]) -> str:
    if not days:
        return f"{HEADING}\n\nNo day replayed yet (`duet plan-day`)."
    lines = [HEADING, "", f"Goals (issue #27): a day replayed with autoscaling costs at most {COST_GOAL:g}x the fixed "
             f"fleet sized for its peak, with good requests within {GOOD_POINTS:g} point of the target.", ""]
    for day in days:
        cost_met, good_met = meets(day)
        s = day["summary"]
        lines.append(f"- {day['replica_set']}: autoscaled {s['autoscaled_vs_fixed']:.2f}x the peak's fixed fleet "
                     f"(**{'met' if cost_met else 'not met'}**), {s['autoscaled_good']:.2%} good against a "
                     f"{day['target']:.0%} target (**{'met' if good_met else 'not met'}**).")
    for day in days:
        lines += ["", f"### {day['replica_set']}: a day", "", _settings(day), "", *_table(day), "",
                  _per_seed(day), "", *_hourly(day), "", f"Command: `{day['command']}`"]
    return "\n".join(lines)


def _settings(day: Day) -> str:
    curve, scaling = day["curve"], day["autoscaling"]
    return (f"{day['trace']} through policy `{day['policy']}`, the day's peak at load {day['peak_scale']:g} (the rate "
            f"`duet plan` sized {_fleet(day['peak_fleet'])} for) and its trough at 1/{curve['peak_to_trough']:g} of it "
            f"at {curve['trough_hour']:g}:00 ({curve['source']}); {day['period_s'] / 60:g}-minute periods of "
            f"{day['window']} trace stretches, {day['seeds']} seeds, speed priors {day['prior_error']:.0%} off "
            f"({day.get('priors', 'drawn per seed')}). "
            f"Autoscaler: the gauge every {scaling['scrape_interval_s']:g} s (rate windows {scaling['scrape_interval_s']:g} "
            f"and {scaling['rate_window_s']:g} s, utilisation per variant {_shares(day['utilisation'])} from the plan), an HPA "
            f"per variant (scale-up window {scaling['scale_up_stabilization_s']:g} s, scale-down "
            f"{scaling['scale_down_stabilization_s']:g} s), replicas serving {day['startup_s']:g} s after they are "
            f"asked for and paid from the ask until drained")


def _shares(utilisation: Mapping[str, float]) -> str:
    return ", ".join(f"{variant} {share:.1%}" for variant, share in sorted(utilisation.items()))


def _table(day: Day) -> list[str]:
    s, days = day["summary"], day["days"]
    n = len(days)
    fixed_hours = sum(d["fixed"]["replica_hours"] for d in days) / n
    plan_hours = sum(d["period_plan"]["replica_hours"] for d in days) / n
    scaled_hours = sum(sum(d["autoscaled"]["replica_hours"].values()) for d in days) / n
    return ["| fleet | replica-hours | cost of the day | vs fixed | good requests |", "|:--|--:|--:|--:|--:|",
            f"| fixed, sized for the peak ({_fleet(day['peak_fleet'])}) | {fixed_hours:.1f} | ${s['fixed_usd']:,.0f} | "
            f"1.00x | {s['fixed_good']:.2%} |",
            f"| the plan per period (counted, not replayed) | {plan_hours:.1f} | ${s['period_plan_usd']:,.0f} | "
            f"{s['period_plan_vs_fixed']:.2f}x | — |",
            f"| autoscaled on `duet_desired_replicas` | {scaled_hours:.1f} | ${s['autoscaled_usd']:,.0f} | "
            f"{s['autoscaled_vs_fixed']:.2f}x | {s['autoscaled_good']:.2%} ± {s['autoscaled_good_ci95']:.2%} |"]


def _per_seed(day: Day) -> str:
    """Each seed's autoscaled cost against the fixed fleet's, and its good share."""
    parts = [f"seed {d['seed']}: {d['autoscaled']['fleet_usd'] / d['fixed']['usd']:.2f}x, "
             f"{d['autoscaled']['good_fraction']:.2%} good (fixed: {d['fixed']['good_fraction']:.2%})"
             for d in day["days"]]
    return "Per seed, autoscaled: " + "; ".join(parts) + "."


def _hourly(day: Day) -> list[str]:
    """The first seed's replicas asked for at each hour's start (standard+fast)."""
    asked = day["days"][0]["autoscaled"]["hourly_asked"]
    hours = len(next(iter(asked.values()), []))
    cells = [f"{asked.get('standard', [0] * hours)[h]}+{asked.get('fast', [0] * hours)[h]}" for h in range(hours)]
    return ["Replicas asked for at each hour (first seed, standard+fast): " + ", ".join(
        f"{h:02d}h {c}" for h, c in enumerate(cells)) + "."]
