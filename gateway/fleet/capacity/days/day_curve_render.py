"""The "A day on a fitted curve" section of docs/benchmarks.md, from the committed day replays that
sized on a capacity curve (``docs/results/capacity/day-curve/*.json``, written by ``duet plan-day
--fit``; the tuning days that chose the autoscaler's settings, its schedule floor and scale-up window,
in ``day-curve/tuning/``): per pairing, the held-out day autoscaled on the curve against issue #37's
two fleets fixed at the peak (counted from the plan the day starts from: ``day_goals.py``), the
curve's points and lines, the floor, and the tuning days."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.capacity.days.day_goals import ALL_STANDARD_GOAL, BASELINE_GOAL
from gateway.fleet.capacity.results import RESULTS

CURVE_RESULTS = RESULTS / "day-curve"
GOOD_POINTS = 1.0  # the autoscaled day's good requests within this many points of the target (or above)
Day = Mapping[str, Any]
HEADING = "## A day on a fitted curve, with engine roles (`duet plan-day --fit`)"


def load(directory: Path = CURVE_RESULTS) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def load_tuning(directory: Path = CURVE_RESULTS / "tuning") -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def verdicts(day: Day) -> dict[str, bool | None]:
    """Each goal: met, missed, or None where the plan had no comparator."""
    against = day["against"]

    def under(key: str, goal: float) -> bool | None:
        return None if against.get(key) is None else against[key]["ratio"] <= goal

    good = day["summary"]["autoscaled_good"] * 100 >= day["target"] * 100 - GOOD_POINTS
    return {"all_standard": under("all_standard_defaults", ALL_STANDARD_GOAL),
            "baseline": under("best_baseline", BASELINE_GOAL), "good": good}


def _word(verdict: bool | None, bound: bool = False) -> str:
    word = "no comparator" if verdict is None else "met" if verdict else "missed"
    return f"{word}, a bound" if bound and verdict is not None else word


def _fleet(counts: Mapping[str, int] | None, layout: Mapping[str, Any] | None = None) -> str:
    if counts is None:
        return "none"
    parts = [f"{counts[v]} {v}" + ("" if layout is None or v not in layout else f" TP{layout[v]['tp']}" + (
        "" if layout[v]["chunk"] is None else f" chunk {layout[v]['chunk']}")) for v in ("standard", "fast") if counts.get(v)]
    return " + ".join(parts) or "none"


def render(days: Sequence[Day], tuning: Sequence[Day] = ()) -> str:
    if not days:
        return f"{HEADING}\n\nNo day sized on a fitted curve replayed yet (`duet plan-day --fit`)."
    lines = [HEADING, "", f"Goals (issue #37): a held-out day autoscaled on a capacity curve costs at most "
             f"{ALL_STANDARD_GOAL:g}x an all-standard fleet fixed at the peak on vLLM's defaults (TP4, default chunk "
             f"budget, routed by llm-d-default) and at most {BASELINE_GOAL:g}x the best baseline's cheapest fleet "
             f"from the same search (fixed at the peak), with good requests within {GOOD_POINTS:g} point of the "
             "target. Both comparators are counted from the plan the day starts from (their price for 24 hours; "
             "their good share as the plan measured it at the peak), not replayed through the day; the all-standard "
             "one from a plan of its own on the same traffic where the day names one (`--all-standard-plan`: its "
             "search went further than the day's plan's, which stopped at its replica bound).", ""]
    for day in days:
        v, a, s = verdicts(day), day["against"], day["summary"]
        lines.append(f"- {day['replica_set']}: autoscaled ${s['autoscaled_usd']:,.0f}, "
                     f"{_ratio(a.get('all_standard_defaults'))} all-standard TP4 "
                     f"(**{_word(v['all_standard'], bool((a.get('all_standard_defaults') or {}).get('bound')))}**), "
                     f"{_ratio(a.get('best_baseline'))} the best baseline (**{_word(v['baseline'])}**), "
                     f"{s['autoscaled_good']:.2%} good (**{_word(v['good'])}**).")
    for day in days:
        lines += ["", f"### {day['replica_set']}: a held-out day on its curve", "", _settings(day), "", *_table(day), "",
                  *_what_it_measures(day), *_curve(day), "", _per_seed(day), "", _hourly(day), "", f"Command: `{day['command']}`"]
    if tuning:
        lines += ["", "### The schedule floor and the scale-up window, chosen on tuning days", "", *_tuning(tuning)]
    return "\n".join(lines)


def _ratio(found: Mapping[str, Any] | None) -> str:
    if found is None:
        return "—"
    return f"≤ {found['ratio']:.2f}x" if found.get("bound") else f"{found['ratio']:.2f}x"


def _settings(day: Day) -> str:
    curve, scaling = day["curve"], day["autoscaling"]
    roles = f", engine roles `{day['roles']}`" if day.get("roles") else ""
    warm = "every configured task type" if day.get("warm_tasks") is None else ", ".join(day["warm_tasks"])
    return (f"{day['trace']} through policy `{day['policy']}` on the plan's layout ({_layout(day.get('layout'))}"
            f"{roles}); the day's peak at load {day['peak_scale']:g} and its trough at 1/{curve['peak_to_trough']:g} "
            f"of it at {curve['trough_hour']:g}:00 ({curve['source']}); {day['period_s'] / 60:g}-minute periods of "
            f"{day['window']} trace stretches, {day['seeds']} seeds, speed priors {day['prior_error']:.0%} off "
            f"({day['priors']}). Autoscaler: the gauge every {scaling['scrape_interval_s']:g} s on the capacity curve, "
            f"a replica kept warm for {warm}{_floor_words(day)}; an HPA per variant (scale-up window "
            f"{scaling['scale_up_stabilization_s']:g} s{_policy_words(scaling)}, scale-down "
            f"{scaling['scale_down_stabilization_s']:g} s), replicas serving {day['startup_s']:g} s after they are "
            "asked for and paid from the ask until drained")


def _floor_words(day: Day) -> str:
    floor = day.get("floor")
    if not floor:
        return ""
    held = ", ".join(f"{v} {h:g}" for v, h in floor["replica_hours"].items())
    return (f"; under it a schedule floor (the gauge reports the higher of the two) learned from {floor['history']}, "
            f"each count asked for {floor['lead_s']:g} s ahead (replica-hours it alone holds in a day: {held})")


def _policy_words(scaling: Mapping[str, Any]) -> str:
    pods = scaling.get("scale_up_pods")
    return "" if pods is None else f", at most {pods} added per {scaling['scale_up_period_s']:g} s"


def setting(day: Day) -> str:
    """What a tuning day varies: its schedule floor (if any), its scale-up window and policy."""
    floor, scaling = day.get("floor"), day["autoscaling"]
    head = "no floor" if not floor else f"floor of {floor['days']} days" + (
        f" less {floor['margin']}" if floor.get("margin") else "")
    return f"{head}, {scaling['scale_up_stabilization_s']:g} s{_policy_words(scaling)}"


def _layout(layout: Mapping[str, Any] | None) -> str:
    if layout is None:
        return "the profiles' own"
    return "; ".join(f"{v} TP{d['tp']}" + ("" if d["chunk"] is None else f" chunk {d['chunk']}") for v, d in layout.items())


def _table(day: Day) -> list[str]:
    s, a = day["summary"], day["against"]
    lines = ["| fleet | cost of the day | autoscaled over it | good requests |", "|:--|--:|--:|--:|"]
    for key, label in (("all_standard_defaults", "all-standard TP4, vLLM's defaults, fixed at the peak"),
                       ("best_baseline", "the best baseline's cheapest fleet, fixed at the peak")):
        found = a.get(key)
        if found is None:
            lines.append(f"| {label}: none found | — | — | — |")
            continue
        if found.get("bound"):
            lines.append(f"| {label}: {found['policy']} found none up to ${found['usd_per_hour']:.0f}/hour (its largest "
                         f"fleet: {found['good']:.2%} good, {found['good_on']}) | > ${found['usd']:,.0f} | "
                         f"{_ratio(found)} | below the target |")
            continue
        own = f"; sized in its own plan, `{found['plan']}`" if found.get("plan") else ""
        lines.append(f"| {label}: {found['policy']} {_fleet(found['fleet'], found.get('layout'))} (counted{own}) | "
                     f"${found['usd']:,.0f} | {found['ratio']:.2f}x | {found['good']:.2%} ({found['good_on']}, peak) |")
    fixed_good = "—" if s["fixed_good"] is None else f"{s['fixed_good']:.2%}"
    lines += [f"| Duet, fixed at the peak: {_fleet(day['peak_fleet'], day.get('layout'))} "
              f"({'replayed' if s['fixed_good'] is not None else 'counted'}) | ${s['fixed_usd']:,.0f} | "
              f"{s['autoscaled_vs_fixed']:.2f}x | {fixed_good} |",
              f"| Duet, the curve per period (counted) | ${s['period_plan_usd']:,.0f} | "
              f"{s['autoscaled_usd'] / s['period_plan_usd']:.2f}x | — |",
              *([] if not day.get("floor") else [
                  f"| Duet, the schedule floor alone (counted) | ${day['floor']['usd']:,.0f} | "
                  f"{s['autoscaled_usd'] / day['floor']['usd']:.2f}x | — |"]),
              f"| **Duet, autoscaled on the curve** (replayed) | ${s['autoscaled_usd']:,.0f} | 1.00x | "
              f"{s['autoscaled_good']:.2%} ± {s['autoscaled_good_ci95']:.2%} |"]
    return lines


def _what_it_measures(day: Day) -> list[str]:
    """Where the saving against the best baseline comes from, as far as the file shows it."""
    baseline, s = day["against"].get("best_baseline"), day["summary"]
    if baseline is None:
        return []
    if round(s["fixed_usd"], 2) == round(baseline["usd"], 2):
        # An autoscaled day can cost more than the peak's fixed fleet (a gauge that overshoots): a
        # "negative saving" would read as a saving, so say which way the autoscaling moved it.
        how = "on the curve," + (" over its schedule floor," if day.get("floor") else "")
        moved = (f"the {1 - baseline['ratio']:.0%} saved against it is the autoscaling's {how} which a baseline "
                 "scaled the same way would share" if baseline["ratio"] <= 1 else
                 f"the autoscaling on the curve costs {baseline['ratio'] - 1:.0%} more than that fleet kept all day")
        return [f"Duet's fleet at the peak costs what the best baseline's does: {moved}; Duet's engine roles and "
                "routing add nothing at the peak here.", ""]
    return [f"Duet's fleet at the peak costs {s['fixed_usd'] / baseline['usd']:.2f}x the best baseline's; the autoscaling "
            f"on the curve takes it to {baseline['ratio']:.2f}x.", ""]


def _curve(day: Day) -> list[str]:
    fit = day.get("capacity_fit")
    if not fit:
        return ["No capacity curve: sized on the plan's utilisation."]
    lines = [f"The capacity curve ({fit['fit']}):", "", "| rate scale | cheapest fleet | good (tuning) | busy replicas |",
             "|--:|:--|--:|--:|"]
    for p in fit["points"]:
        lines.append(f"| x{p['rate_scale']:g} | {_fleet(p['fleet'])} | {p['share']:.2%} | {p['busy_replicas']:.3f} |")
    lines += ["", "Fitted: " + "; ".join(f"{v} = {c['intercept']:+.2f} + {c['per_busy_replica']:.2f} x busy"
                                         for v, c in day["capacity_by_variant"].items()) + "."]
    return lines


def _per_seed(day: Day) -> str:
    parts = [f"seed {d['seed']}: ${d['autoscaled']['fleet_usd']:,.0f}, {d['autoscaled']['good_fraction']:.2%} good"
             for d in day["days"]]
    return "Per seed, autoscaled: " + "; ".join(parts) + "."


def _hourly(day: Day) -> str:
    asked = day["days"][0]["autoscaled"]["hourly_asked"]
    hours = len(next(iter(asked.values()), []))
    cells = [f"{asked.get('standard', [0] * hours)[h]}+{asked.get('fast', [0] * hours)[h]}" for h in range(hours)]
    return "Replicas asked for at each hour (first seed, standard+fast): " + ", ".join(
        f"{h:02d}h {c}" for h, c in enumerate(cells)) + "."


def chosen_settings(days: Sequence[Day]) -> dict[str, str]:
    """Per pairing, the ``setting`` of its cheapest tuning day within ``GOOD_POINTS`` of the
    target (none within: the one with the most good requests)."""
    chosen: dict[str, str] = {}
    for name in sorted({d["replica_set"] for d in days}):
        mine = [d for d in days if d["replica_set"] == name]
        good = [d for d in mine if d["summary"]["autoscaled_good"] * 100 >= d["target"] * 100 - GOOD_POINTS]
        best = min(good, key=lambda d: d["summary"]["autoscaled_usd"]) if good else max(
            mine, key=lambda d: d["summary"]["autoscaled_good"])
        chosen[name] = setting(best)
    return chosen


def _tuning(days: Sequence[Day]) -> list[str]:
    chosen = chosen_settings(days)
    lines = [f"Rule: per pairing, the cheapest tuning day within {GOOD_POINTS:g} point of the target (none within: the "
             "most good requests); the held-out day runs its settings. A floor is learned from other tuning days "
             "than the one scored here (`day_floor.py`).", "",
             "| pairing | floor, scale-up window | autoscaled cost | good (tuning day) | most replicas asked at an hour's "
             "start (first seed) | command |", "|:--|:--|--:|--:|--:|:--|"]
    order = sorted(days, key=lambda d: (d["replica_set"], bool(d.get("floor")), (d.get("floor") or {}).get("margin", 0),
                                        d["autoscaling"]["scale_up_stabilization_s"]))
    for day in order:
        s, label = day["summary"], setting(day)
        mark = " **(chosen)**" if chosen[day["replica_set"]] == label else ""
        asked = day["days"][0]["autoscaled"]["hourly_asked"].values()
        most = max((sum(hour) for hour in zip(*asked, strict=True)), default=0)
        lines.append(f"| {day['replica_set']} | {label}{mark} | ${s['autoscaled_usd']:,.0f} | "
                     f"{s['autoscaled_good']:.2%} | {most} | `{day['command']}` |")
    return lines
