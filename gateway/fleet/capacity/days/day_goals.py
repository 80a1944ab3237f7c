"""What a day on a fitted curve is measured against (issue #37), from the ``duet plan`` results the
day starts from: (a) an all-standard fleet fixed at the peak on vLLM's defaults (TP4, the
profile's chunk budget), routed by the plan's all-standard policy (llm-d-default in the committed
runs), and (b) the best baseline's cheapest fleet from the same search (one TP size and chunk
budget for all its replicas), fixed at the peak. Both are counted, not replayed: their cost is
their hourly price for the day, their good share the one the plan measured at the peak. Where the
plan found no such fleet within its bounds, the largest fleet it tried (which missed the target)
is the comparator's cost as a lower bound, so the day's ratio over it is an upper bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.fleet.capacity.results import ALL_STANDARD_SUFFIX, traffic_differs

ALL_STANDARD_GOAL, BASELINE_GOAL = 0.35, 0.75
DEFAULTS = {"standard": {"tp": 4, "chunk": None}}


def _all_standard_at_defaults(plans: Mapping[str, Any]) -> dict[str, Any] | None:
    for name, plan in plans.items():
        if plan["role"] != "all-standard":
            continue
        for search in plan.get("layouts", []):
            if search["layout"] == DEFAULTS and search.get("searched"):
                return {"policy": name.removesuffix(ALL_STANDARD_SUFFIX), "fleet": search["fleet"], "layout": search["layout"],
                        "usd_per_hour": search["usd_per_hour"], "good": search["share"], "good_on": "tuning seeds",
                        "bound": search["fleet"] is None}
    return None


def _best_baseline(plans: Mapping[str, Any]) -> dict[str, Any] | None:
    found = [(n, p) for n, p in plans.items() if p["role"] == "baseline" and p["fleet"] is not None]
    if not found:
        return None
    name, plan = min(found, key=lambda item: (item[1]["usd_per_hour"], -item[1]["search_share"]))
    return {"policy": name, "fleet": plan["fleet"], "layout": plan.get("layout"), "usd_per_hour": plan["usd_per_hour"],
            "good": plan.get("check_share"), "good_on": "held-out seeds", "bound": False}


def comparators(plan_results: Mapping[str, Any],
                all_standard: tuple[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any] | None]:
    """``all_standard_defaults`` (a) and ``best_baseline`` (b); None where the plan found none.
    ``all_standard``: (its path, the results of) another plan on the same traffic whose
    all-standard fleet is (a) instead, e.g. one whose all-standard search went further
    (``duet plan --all-standard-max-replicas``): a bound where the day's plan stopped short."""
    plans = plan_results["plans"]
    found = {"all_standard_defaults": _all_standard_at_defaults(plans), "best_baseline": _best_baseline(plans)}
    if all_standard is not None:
        path, other = all_standard
        for key in traffic_differs(plan_results, other):
            raise ValueError(f"{path}: its {key} ({other.get(key)}) is not the day's plan's ({plan_results.get(key)})")
        searched = _all_standard_at_defaults(other["plans"])
        if searched is None:
            raise ValueError(f"{path}: no all-standard fleet on vLLM's defaults (TP4, default chunk) was searched")
        found["all_standard_defaults"] = {**searched, "plan": path, "plan_command": other["command"]}
    return found


def against(autoscaled_usd: float, day_s: float, found: Mapping[str, dict[str, Any] | None]) -> dict[str, Any]:
    """Each comparator's cost of the day and the autoscaled day's cost over it (None: no comparator;
    ``bound``: the comparator found no fleet, its cost a lower bound and the ratio an upper one)."""
    out: dict[str, Any] = {}
    for key, comparator in found.items():
        if comparator is None:
            out[key] = None
            continue
        usd = comparator["usd_per_hour"] * day_s / 3600.0
        out[key] = {**comparator, "usd": round(usd, 2), "ratio": round(autoscaled_usd / usd, 4)}
    return out
