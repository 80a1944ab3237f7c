"""The capacity section of docs/benchmarks.md, from the committed plans (``results.py``): what was
found against issue #27's goals first, then per replica set each policy's cheapest fleet.

A policy whose search found no fleet within its bounds costs more than the largest fleet it
tried: its ratio to Duet is then a bound ("< 0.4x"), which meets a goal when the bound does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BASELINE_GOAL, ALL_STANDARD_GOAL = 0.8, 0.5  # Duet's cheapest fleet at most this many times the other's
CHECK_POINTS = 0.5  # the plan's fleet on held-out seeds: within this many points of the target, or above
PAIRINGS_NEEDED = 2
Plan = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Ratio:
    """Duet's cheapest fleet's cost over another's: ``bound`` when the other found none (then the
    true ratio is lower), None when Duet found none."""

    name: str
    value: float | None
    bound: bool

    def meets(self, goal: float) -> bool:
        return self.value is not None and self.value <= goal

    def __str__(self) -> str:
        if self.value is None:
            return "— (Duet found no fleet)"
        return f"{'< ' if self.bound else ''}{self.value:.2f}x {self.name}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One replica set's plan against the goals."""

    replica_set: str
    duet: Plan
    baseline: Ratio
    all_standard: Ratio
    check_met: bool

    @property
    def costs_met(self) -> bool:
        return self.baseline.meets(BASELINE_GOAL) and self.all_standard.meets(ALL_STANDARD_GOAL)


def _ratio(duet: Plan, others: Mapping[str, Plan]) -> Ratio:
    """Against the cheapest of ``others`` (a found fleet's cost, else the largest tried's)."""
    name, other = min(others.items(), key=lambda item: (item[1]["fleet"] is None, item[1]["usd_per_hour"]))
    if duet["fleet"] is None:
        return Ratio(name, None, False)
    if other["fleet"] is None:  # none found: every other's cheapest costs more than its largest tried
        name, other = max(others.items(), key=lambda item: item[1]["usd_per_hour"])
    return Ratio(name, duet["usd_per_hour"] / other["usd_per_hour"], other["fleet"] is None)


def verdict(results: Mapping[str, Any]) -> Verdict:
    plans = results["plans"]
    duet = plans[results["policy"]]
    baselines = {n: p for n, p in plans.items() if p["role"] == "baseline"}
    standard = {n: p for n, p in plans.items() if p["role"] == "all-standard"}
    check = duet.get("check_share")
    met = check is not None and 100 * (check - results["target"]) >= -CHECK_POINTS
    return Verdict(_name(results), duet, _ratio(duet, baselines), _ratio(duet, standard), met)


def _name(results: Mapping[str, Any]) -> str:
    """The replica set and the traffic it was planned for (one set may be planned for several)."""
    return f"{results['replica_set']} on {results['trace']}"


def _fleet(plan: Plan) -> str:
    fleet = plan["fleet"]
    if fleet is None:
        largest = plan["largest"]
        return f"none up to {largest['standard']}+{largest['fast']}"
    return f"{fleet['standard']}+{fleet['fast']}"


def _usd(plan: Plan) -> str:
    return f"{'> ' if plan['fleet'] is None else ''}${plan['usd_per_hour']:.0f}"


def _check(plan: Plan) -> str:
    if "check_share" not in plan:
        return "—"
    return f"{plan['check_share']:.2%} ± {100 * plan['check_ci95']:.2f}"


def _utilisation(results: Mapping[str, Any]) -> list[str]:
    """What Duet's fleet uses of its replicas' capacity in the gauge's terms (older plans did not say)."""
    used = results["plans"][results["policy"]].get("utilisation")
    if not used:
        return []
    shares = ", ".join(f"{variant} {share:.1%}" for variant, share in sorted(used.items()))
    return [f"Duet's fleet uses {shares} of its replicas' step-model capacity at the budgets "
            "(`duet plan --write-config` writes it as `autoscaling.utilisation_by_variant`: the gauge's headroom).", ""]


def table(results: Mapping[str, Any]) -> list[str]:
    """One row per policy, Duet first, then by cost."""
    plans = results["plans"]
    duet = plans[results["policy"]]
    order = sorted(plans, key=lambda n: (n != results["policy"], plans[n]["fleet"] is None, plans[n]["usd_per_hour"]))
    lines = ["| policy | fleet (standard+fast) | $/hour | good, tuning seeds | good, held-out seeds | cost vs Duet | "
             "replays |", "|:--|--:|--:|--:|--:|--:|--:|"]
    for name in order:
        plan = plans[name]
        label = f"**{name}**" if name == results["policy"] else name if plan["role"] == "baseline" else \
            f"{name} (standard only)"
        versus = f"{'> ' if plan['fleet'] is None else ''}{plan['usd_per_hour'] / duet['usd_per_hour']:.2f}x"
        lines.append(f"| {label} | {_fleet(plan)} | {_usd(plan)} | {plan['search_share']:.2%} | {_check(plan)} | "
                     f"{versus} | {plan['replays']} |")
    return lines


def _settings(results: Mapping[str, Any]) -> str:
    search, check = results["search"], results["check"]
    return (f"{results['trace']} x{results['rate_scale']:g}, target {results['target']:.0%} good; searched on "
            f"{search['seeds']} seeds of the {search['name']} window ({search['span_s']:g} trace s each, trace seconds "
            f"{search['covered_s'][0]:g}-{search['covered_s'][1]:g}), checked on {check['seeds']} held-out seeds "
            f"({check['covered_s'][0]:g}-{check['covered_s'][1]:g}); up to {results['max_replicas']} replicas per variant")


def _wall(results: Mapping[str, Any]) -> tuple[int, float]:
    plans = results["plans"].values()
    return sum(p["replays"] for p in plans), sum(p["wall_s"]["search"] + p["wall_s"]["check"] for p in plans)


def render(plans: Sequence[Mapping[str, Any]]) -> str:
    """The section's Markdown."""
    lines = ["## Capacity: the cheapest fleet per policy (`duet plan`)", ""]
    if not plans:
        return "\n".join([*lines, "No plan committed yet."])
    verdicts = [verdict(r) for r in plans]
    met = sum(v.costs_met for v in verdicts)
    lines += [f"Issue #27's goals: Duet's cheapest fleet at most {BASELINE_GOAL:g}x the best baseline policy's and at "
              f"most {ALL_STANDARD_GOAL:g}x an all-standard fleet's, at the same target, on at least {PAIRINGS_NEEDED} "
              f"pairings: **{'met' if met >= PAIRINGS_NEEDED else 'not met'}** ({met} of {len(verdicts)}). The plan's "
              f"fleet, replayed on held-out seeds, within {CHECK_POINTS:g} points of the target or above: "
              f"**{'met' if all(v.check_met for v in verdicts) else 'not met'}**.", ""]
    for v in verdicts:
        lines.append(f"- {v.replica_set}: Duet {_fleet(v.duet)} ({_usd(v.duet)}/hour), {v.baseline} "
                     f"({'met' if v.baseline.meets(BASELINE_GOAL) else 'not met'}), {v.all_standard} "
                     f"({'met' if v.all_standard.meets(ALL_STANDARD_GOAL) else 'not met'}); held out "
                     f"{_check(v.duet)} good ({'met' if v.check_met else 'not met'})")
    lines += ["", "A fleet costs its replicas' GPUs x $/GPU-hour busy or idle (`gateway/fleet/world/pricing.py`); "
              "cheapest first, equal costs by the higher good share. Good: every budget of the request met on a "
              "variant parity allows for its task. Each fleet of a search is replayed on the same seeds; the one "
              "found is then replayed on the held-out seeds."]
    for results in plans:
        replays, wall = _wall(results)
        lines += ["", f"### {_name(results)}", "", _settings(results) + ".", "", *table(results), "",
                  *_utilisation(results),
                  f"{replays} replays, {wall / 60:.0f} minutes of worker time (summed over the `--jobs` processes; the "
                  "good shares are in virtual time and do not depend on it). Command:", "", "```sh", results["command"],
                  "```"]
    return "\n".join(lines)
