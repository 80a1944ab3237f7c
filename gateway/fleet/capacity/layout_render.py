"""The capacity-over-layouts section of docs/benchmarks.md, from the committed plans that searched
TP sizes and chunk budgets (``docs/results/capacity/layouts/*.json``, written by ``duet plan --tp``):
against issue #37's cost goals first, then per pairing each policy's cheapest fleet and layout, and
the Pareto frontier of Duet's search (GPU-dollars per hour against good share).

The goals are issue #37's, read for one plan at one load: Duet's cheapest fleet at most
``BASELINE_GOAL`` x the best baseline's (each baseline one configuration for all its replicas, the
best it found) and at most ``ALL_STANDARD_GOAL`` x an all-standard fleet on vLLM's defaults (TP4,
the profile's chunk budget). The issue sets the second for a held-out day autoscaled on a fitted
curve; a fixed fleet at one load is the part measured here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.capacity.results import RESULTS, traffic_differs

LAYOUT_RESULTS = RESULTS / "layouts"
# Plans of their own sizing the all-standard fleet further than a layout plan's replica bound, by
# the same file name (``duet plan --all-standard-max-replicas``).
ALL_STANDARD_RESULTS = RESULTS / "all-standard"
REPO = RESULTS.parents[2]
BASELINE_GOAL, ALL_STANDARD_GOAL = 0.75, 0.35
Plan = Mapping[str, Any]


def load(directory: Path = LAYOUT_RESULTS, further: Path = ALL_STANDARD_RESULTS) -> list[dict[str, Any]]:
    """Every committed plan over layouts, by replica set name; each with, as ``all_standard_plan``,
    the plan of the same name in ``further`` where one on the same traffic was committed."""
    out = []
    for path in sorted(directory.glob("*.json")):
        results = json.loads(path.read_text())
        other = further / path.name
        if other.exists():
            searched = json.loads(other.read_text())
            if not traffic_differs(results, searched):
                shown = other.relative_to(REPO) if other.is_relative_to(REPO) else other
                results["all_standard_plan"] = {"path": str(shown), "plans": searched["plans"]}
        out.append(results)
    return out


def _deployment(d: Mapping[str, Any]) -> str:
    return f"TP{d['tp']}" + ("" if d["chunk"] is None else f", chunk {d['chunk']}")


def layout_text(layout: Mapping[str, Any], roles: str | None = None) -> str:
    """``standard TP4; fast TP2`` and, where a role mix is laid over the replicas, ``; roles split``."""
    return "; ".join([*(f"{variant} {_deployment(d)}" for variant, d in layout.items()), *([f"roles {roles}"] if roles else [])])


def fleet_text(fleet: Mapping[str, int] | None, layout: Mapping[str, Any]) -> str:
    """``10 fast TP2`` (+ ``2 standard TP4``): the replicas the fleet runs, each on its GPUs."""
    if fleet is None:
        return "none found"
    parts = [f"{fleet[v]} {v} {_deployment(layout[v])}" for v in ("fast", "standard") if fleet.get(v) and v in layout]
    return " + ".join(parts) or "no replicas"


def _gpus(fleet: Mapping[str, int], layout: Mapping[str, Any]) -> int:
    return sum(n * layout[v]["tp"] for v, n in fleet.items() if n)


def _found(plan: Plan) -> bool:
    return plan["fleet"] is not None


def best(plans: Mapping[str, Plan], role: str) -> tuple[str, Plan] | None:
    """The cheapest found fleet among the plans of ``role`` (equal costs: the higher share)."""
    found = [(n, p) for n, p in plans.items() if p["role"] == role and _found(p)]
    return min(found, key=lambda item: (item[1]["usd_per_hour"], -item[1]["search_share"]), default=None)


def all_standard_at_defaults(plans: Mapping[str, Plan]) -> Plan | None:
    """The all-standard fleet's search at TP4 and the profile's chunk budget (vLLM's defaults);
    one that found no fleet gives its largest fleet's cost, a lower bound (``fleet`` None)."""
    for plan in plans.values():
        if plan["role"] != "all-standard":
            continue
        for search in plan.get("layouts", []):
            if search["layout"] == {"standard": {"tp": 4, "chunk": None}} and search.get("searched", True):
                found: Plan = search
                return found
    return None


def tp4_comparator(results: Mapping[str, Any]) -> Plan | None:
    """The all-standard TP4 search the goal counts: the plan of its own's (``all_standard_plan``)
    where one was attached and searched it, else this plan's."""
    further = results.get("all_standard_plan")
    found = None if further is None else all_standard_at_defaults(further["plans"])
    return found if found is not None else all_standard_at_defaults(results["plans"])


def ratios(results: Mapping[str, Any]) -> dict[str, float | None]:
    """Duet's cost over the best baseline's, the best all-standard fleet's and TP4 all-standard's."""
    plans = results["plans"]
    duet = plans[results["policy"]]
    baseline, standard = best(plans, "baseline"), best(plans, "all-standard")

    def over(other: Plan | None) -> float | None:
        return None if other is None or not _found(duet) else round(duet["usd_per_hour"] / other["usd_per_hour"], 3)

    return {"baseline": over(baseline[1] if baseline else None), "all_standard": over(standard[1] if standard else None),
            "all_standard_tp4": over(tp4_comparator(results))}


def all_standard_tp4_is_bound(results: Mapping[str, Any]) -> bool:
    """Whether the TP4 all-standard ratio is an upper bound (that search found no fleet)."""
    defaults = tp4_comparator(results)
    return defaults is not None and not defaults.get("fleet")


def pareto(plan: Plan) -> list[dict[str, Any]]:
    """The fleets of every layout's search that no other beats on both cost and good share,
    cheapest first: each with its layout."""
    points = [{"usd_per_hour": t["usd_per_hour"], "share": t["share"], "fleet": t["fleet"], "layout": s["layout"],
               "roles": s.get("roles")}
              for s in plan.get("layouts", []) if s.get("searched") for t in s["tried"] if any(t["fleet"].values())]
    frontier: list[dict[str, Any]] = []
    for point in sorted(points, key=lambda p: (p["usd_per_hour"], -p["share"])):
        if not frontier or point["share"] > frontier[-1]["share"]:
            frontier.append(point)
    return frontier


def cheapest_by_fast_tp(plan: Plan) -> dict[int, float | None]:
    """Fast TP size -> the cheapest fleet Duet's search found with it (None: none under the cap)."""
    costs: dict[int, float | None] = {}
    for search in plan.get("layouts", []):
        fast = search["layout"].get("fast")
        if fast is None:
            continue
        cost = search["usd_per_hour"] if search.get("fleet") else None
        known = costs.get(fast["tp"])
        costs[fast["tp"]] = cost if known is None else known if cost is None else min(known, cost)
    return dict(sorted(costs.items()))


def cheapest_by_roles(plan: Plan) -> dict[str, float | None]:
    """Role mix ("none": every replica as its layout) -> the cheapest fleet Duet's search found with it."""
    costs: dict[str, float | None] = {}
    for search in plan.get("layouts", []):
        name = search.get("roles") or "none"
        cost = search["usd_per_hour"] if search.get("fleet") else None
        known = costs.get(name)
        costs[name] = cost if known is None else known if cost is None else min(known, cost)
    return costs


def why(results: Mapping[str, Any]) -> list[str]:
    """What the committed plan shows about why Duet's fleet costs what it does (from the file alone)."""
    plans = results["plans"]
    duet, found = plans[results["policy"]], best(plans, "baseline")
    if not _found(duet):
        return ["Duet found no fleet within its bounds."]
    lines = []
    if found is not None and found[1]["usd_per_hour"] == duet["usd_per_hour"]:
        name, baseline = found
        same = baseline["fleet"] == duet["fleet"] and baseline.get("layout") == duet.get("layout")
        lines.append(f"{name} reaches the target at Duet's cost" + (
            " with the same fleet: on replicas of one variant in one layout, routing changes nothing" if same else ""))
    if not duet["fleet"].get("standard"):
        lines.append("Duet's fleet has no standard replica: parity lets the fast variant serve every task of this "
                     "traffic, so the saving over all-standard is the fast variant's, which the baselines share")
    mixes = cheapest_by_roles(duet)
    if len(mixes) > 1:
        lines.append("Duet's cheapest fleet per role mix: " + ", ".join(
            f"{n} {'none under the cap' if c is None else f'${c:.0f}'}" for n, c in mixes.items()))
    if duet.get("roles"):
        lines.append(f"Duet's fleet runs role mix {duet['roles']}: `{duet['replay_policy']}` in `duet replay`'s terms")
    sizes = cheapest_by_fast_tp(duet)
    if len(sizes) > 1:
        lines.append("Duet's cheapest fleet per fast TP size: " + ", ".join(
            f"TP{n} {'none under the cap' if c is None else f'${c:.0f}'}" for n, c in sizes.items()))
    return lines


def _ratio(value: float | None, goal: float, bound: bool = False) -> str:
    if value is None:
        return "— (no fleet found)"
    verdict = f"{'met' if value <= goal else 'missed'}{', a bound: that search found no fleet' if bound else ''}"
    return f"{'≤ ' if bound else ''}{value:.2f}x ({verdict}: goal <= {goal:g}x)"


def _policies(results: Mapping[str, Any]) -> list[str]:
    plans = results["plans"]
    order = sorted(plans, key=lambda n: (n != results["policy"], not _found(plans[n]), plans[n]["usd_per_hour"]))
    lines = ["| policy | role | layout (per variant) | fleet | GPUs | $/hour | good, tuning | good, held out |",
             "|:--|:--|:--|:--|--:|--:|--:|--:|"]
    for name in order:
        plan = plans[name]
        layout = plan.get("layout", {})
        held = "—" if "check_share" not in plan else f"{plan['check_share']:.2%} ± {100 * plan['check_ci95']:.2f}"
        gpus = "—" if plan["fleet"] is None else str(_gpus(plan["fleet"], layout))
        usd = f"{'> ' if plan['fleet'] is None else ''}${plan['usd_per_hour']:.0f}"
        label = f"**{name}**" if name == results["policy"] else name
        text = layout_text(layout, plan.get("roles"))
        lines.append(f"| {label} | {plan['role']} | {text} | {fleet_text(plan['fleet'], layout)} | "
                     f"{gpus} | {usd} | {plan['search_share']:.2%} | {held} |")
    return lines


def _searches(plan: Plan) -> list[str]:
    """Each layout Duet searched: its cheapest fleet, or why it was cut short."""
    lines = ["| layout | cheapest fleet meeting the target | $/hour | fleets replayed |", "|:--|:--|--:|--:|"]
    for search in plan.get("layouts", []):
        layout, text = search["layout"], layout_text(search["layout"], search.get("roles"))
        if not search["searched"]:
            lines.append(f"| {text} | not searched: no fleet under the cheapest found so far | — | 0 |")
            continue
        fleet = search["fleet"]
        usd = f"${search['usd_per_hour']:.0f}" if fleet else "—"
        lines.append(f"| {text} | {fleet_text(fleet, layout) if fleet else 'none under the cap'} | "
                     f"{usd} | {len(search['tried'])} |")
    return lines


def _frontier(plan: Plan) -> list[str]:
    chosen = (plan["fleet"], plan.get("layout"), plan.get("roles"))
    lines = ["| $/hour | GPUs | good share (tuning seeds) | fleet (each variant on its TP size) |", "|--:|--:|--:|:--|"]
    for point in pareto(plan):
        mark = " **(chosen)**" if (point["fleet"], point["layout"], point["roles"]) == chosen else ""
        roles = f", roles {point['roles']}" if point["roles"] else ""
        lines.append(f"| ${point['usd_per_hour']:.0f} | {_gpus(point['fleet'], point['layout'])} | {point['share']:.2%} | "
                     f"{fleet_text(point['fleet'], point['layout'])}{roles}{mark} |")
    return lines


def _settings(results: Mapping[str, Any]) -> str:
    search, check, options = results["search"], results["check"], results["layouts"]
    tp = ", ".join(f"{v} TP {'/'.join(map(str, options[v]['tp']))}" for v in ("standard", "fast"))
    chunks = ", ".join(f"{v} {'/'.join('profile' if c is None else str(c) for c in options[v]['chunk'])}"
                       for v in ("standard", "fast"))
    mixes = ", ".join(f"{m['name']} ({_mix_text(m)})" for m in options.get("roles", [])) or "none"
    return (f"{results['trace']} x{results['rate_scale']:g}, target {results['target']:.0%} good; options: {tp}; "
            f"chunk budget {chunks}; Duet's role mixes {mixes}; ${results['usd_per_gpu_hour']:.2f} per GPU-hour; "
            f"searched on {search['seeds']} "
            f"seeds of the {search['name']} window ({search['span_s']:g} trace s each), checked on {check['seeds']} "
            f"held-out seeds; up to {results['max_replicas']} TP4 replicas' worth of GPUs per variant")


def _mix_text(mix: Mapping[str, Any]) -> str:
    """``standard's first half at 16384, fast's at 8192, the rest at 2048; up to 2 standard prefill-only``."""
    large = ", ".join(f"{v}'s at {n}" for v, n in mix["large"].items())
    prefill = f"; up to {mix['prefill']} standard replicas prefill-only" if mix["prefill"] else ""
    return f"first half {large}, the rest at {mix['small']}{prefill}"


def render(plans: Sequence[Mapping[str, Any]]) -> str:
    """The section's Markdown."""
    lines = ["## Capacity over layouts: TP size, chunk budget and engine roles per variant (`duet plan --tp`)", ""]
    if not plans:
        return "\n".join([*lines, "No plan over layouts committed yet."])
    lines += [f"Issue #37's goals, for one plan at one load: Duet's cheapest fleet at most {BASELINE_GOAL:g}x the best "
              f"baseline's (each baseline one TP size and chunk budget for all its replicas, the best it found) and "
              f"at most {ALL_STANDARD_GOAL:g}x an all-standard fleet on vLLM's defaults (TP4). Duet chooses each "
              "variant's layout and, where the plan offers role mixes (`--roles`), engine roles over its replicas "
              "(chunk-budget groups, prefill-only replicas; gateway/fleet/capacity/roles.py); a layout's search is "
              "capped at the cheapest fleet found before it. Duet's configuration is chosen on the tuning seeds; "
              "the held-out column is the check.", ""]
    for results in plans:
        r = ratios(results)
        duet = results["plans"][results["policy"]]
        best_standard = "—" if r["all_standard"] is None else f"{r['all_standard']:.2f}x"
        roles = f", roles {duet['roles']}" if duet.get("roles") else ""
        tp4 = _ratio(r["all_standard_tp4"], ALL_STANDARD_GOAL, all_standard_tp4_is_bound(results))
        further = results.get("all_standard_plan")
        own = None if further is None else all_standard_at_defaults(further["plans"])
        if further is not None and own is not None:
            tp4 += (f" ({fleet_text(own['fleet'], own['layout'])}, ${own['usd_per_hour']:.0f}/hour, "
                    f"sized in its own plan, `{further['path']}`)")
        lines.append(f"- {results['replica_set']} on {results['trace']}: Duet "
                     f"{fleet_text(duet['fleet'], duet.get('layout', {}))}{roles} (${duet['usd_per_hour']:.0f}/hour); "
                     f"against the best baseline {_ratio(r['baseline'], BASELINE_GOAL)}; against all-standard TP4 "
                     f"{tp4}; against the best all-standard layout {best_standard}")
    for results in plans:
        duet = results["plans"][results["policy"]]
        lines += ["", f"### {results['replica_set']} on {results['trace']}", "", _settings(results) + ".", "",
                  *_policies(results), "", *(f"- {line}." for line in why(results)), "",
                  "Duet's search, layout by layout:", "", *_searches(duet), "",
                  "The Pareto frontier of Duet's search (every fleet replayed, over every layout; none cheaper "
                  "reaches a higher good share):", "", *_frontier(duet), "", "Command:", "", "```sh",
                  results["command"], "```"]
    return "\n".join(lines)
