"""The capacity section and headline from plans: the goals' verdicts, bounds when a policy found no fleet."""

from __future__ import annotations

from gateway.fleet.capacity.render import render, verdict
from loadtests.sections.headlines import capacity as headline


def plan(role, fleet, usd, check=None, largest=None):
    found = {"role": role, "fleet": fleet, "replicas": None if fleet is None else sum(fleet.values()),
             "usd_per_hour": usd, "search_share": 0.99, "replays": 10, "wall_s": {"search": 30.0, "check": 6.0}}
    if fleet is None:
        found["largest"] = largest
    if check is not None:
        found.update(check_share=check, check_ci95=0.001, check_runs=[check])
    return found


def results(name, duet_usd, baseline_usd, standard_usd, check=0.992):
    window = {"name": "tuning", "span_s": 600.0, "seeds": 3, "covered_s": [0.0, 720.0]}
    return {"replica_set": name, "policy": "duet", "target": 0.99, "trace": "code,conv", "rate_scale": 1.0,
            "max_replicas": 16, "command": f"duet plan --replicas {name}", "search": window,
            "check": {**window, "name": "heldout", "seeds": 5},
            "plans": {
                "duet": plan("duet", {"standard": 1, "fast": 3}, duet_usd, check),
                "least-loaded": plan("baseline", {"standard": 2, "fast": 4}, baseline_usd, 0.99),
                "round-robin": plan("baseline", {"standard": 3, "fast": 4}, baseline_usd + 12, 0.99),
                "always-standard": (plan("all-standard", {"standard": 9, "fast": 0}, standard_usd, 0.99)
                                    if standard_usd else plan("all-standard", None, 192.0, largest={"standard": 16, "fast": 0})),
            }}


def test_verdicts_compare_duet_with_the_cheapest_baseline_and_all_standard():
    v = verdict(results("a", 48.0, 72.0, 108.0))
    assert (v.baseline.name, round(v.baseline.value, 3)) == ("least-loaded", 0.667)
    assert round(v.all_standard.value, 3) == 0.444 and v.costs_met and v.check_met
    assert not verdict(results("a", 60.0, 72.0, 108.0)).costs_met  # 0.83x the baseline
    assert not verdict(results("a", 48.0, 72.0, 108.0, check=0.984)).check_met  # 0.6 points under


def test_an_all_standard_fleet_never_found_gives_a_bound():
    v = verdict(results("a", 48.0, 72.0, None))
    assert v.all_standard.bound and str(v.all_standard) == "< 0.25x always-standard" and v.costs_met


def test_the_goals_need_two_pairings():
    one = [results("a", 48.0, 72.0, 108.0), results("b", 72.0, 72.0, 108.0)]
    assert "**not met** (1 of 2)" in render(one) and headline(one).met is False
    two = [results("a", 48.0, 72.0, 108.0), results("b", 48.0, 72.0, None)]
    text = render(two)
    assert "**met** (2 of 2)" in text and "| **duet** | 1+3 | $48 |" in text and "none up to 16+0" in text
    assert headline(two).met is True and headline(two).area == "Capacity"


def test_no_plan_yet():
    assert render([]).endswith("No plan committed yet.") and headline([]).met is False
