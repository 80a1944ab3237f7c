"""The capacity-over-layouts section: the ratios against the goals, the Pareto frontier of Duet's
search, and fleets written with each variant's GPUs, from a results file alone."""

from __future__ import annotations

from typing import Any

from gateway.fleet.capacity import layout_render

TP4, TP2, TP8 = ({"tp": n, "chunk": None} for n in (4, 2, 8))


def _search(layout: dict[str, Any], tried: list[tuple[dict[str, int], float, float]],
            fleet: dict[str, int] | None) -> dict[str, Any]:
    usd = next(u for f, _, u in tried if f == fleet) if fleet else 0.0
    return {"layout": layout, "searched": True, "fleet": fleet, "usd_per_hour": usd,
            "tried": [{"fleet": f, "share": s, "usd_per_hour": u} for f, s, u in tried]}


def _plan(role: str, usd: float, fleet: dict[str, int] | None, layout: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": role, "usd_per_hour": usd, "fleet": fleet, "layout": layout, "search_share": 0.995,
            "check_share": 0.993, "check_ci95": 0.002, **extra}


def results() -> dict[str, Any]:
    duet_layouts = [
        _search({"standard": TP4, "fast": TP4}, [({"standard": 0, "fast": 6}, 0.995, 72.0),
                                                 ({"standard": 0, "fast": 5}, 0.97, 60.0)], {"standard": 0, "fast": 6}),
        _search({"standard": TP4, "fast": TP2}, [({"standard": 0, "fast": 10}, 0.992, 60.0),
                                                 ({"standard": 0, "fast": 8}, 0.96, 48.0),
                                                 ({"standard": 0, "fast": 9}, 0.98, 54.0)], {"standard": 0, "fast": 10}),
        {"layout": {"standard": TP8, "fast": TP2}, "searched": False},
    ]
    standard_layouts = [_search({"standard": TP4}, [({"standard": 7, "fast": 0}, 0.991, 84.0)], {"standard": 7, "fast": 0}),
                        _search({"standard": TP8}, [({"standard": 4, "fast": 0}, 0.992, 96.0)], {"standard": 4, "fast": 0})]
    return {
        "replica_set": "h100-70b-w4a16", "trace": "code,conv", "policy": "duet", "rate_scale": 0.5, "target": 0.99,
        "max_replicas": 10, "usd_per_gpu_hour": 3.0, "command": "duet plan ...",
        "search": {"seeds": 3, "name": "tuning", "span_s": 300.0}, "check": {"seeds": 3},
        "layouts": {"standard": {"tp": [4, 8], "chunk": [None]}, "fast": {"tp": [1, 2, 4], "chunk": [None]}},
        "plans": {
            "duet": _plan("duet", 60.0, {"standard": 0, "fast": 10}, {"standard": TP4, "fast": TP2},
                          layouts=duet_layouts),
            "least-loaded": _plan("baseline", 72.0, {"standard": 0, "fast": 6}, {"standard": TP4, "fast": TP4}),
            "llm-d-default": _plan("baseline", 120.0, None, {"standard": TP4, "fast": TP4}),
            "always-standard": _plan("all-standard", 84.0, {"standard": 7, "fast": 0}, {"standard": TP4},
                                     layouts=standard_layouts),
        },
    }


def test_the_ratios_are_against_the_best_found_baseline_and_all_standard_at_tp4():
    assert layout_render.ratios(results()) == {"baseline": 0.833, "all_standard": 0.714, "all_standard_tp4": 0.714}


def test_the_frontier_keeps_only_fleets_no_cheaper_one_beats_and_skips_layouts_not_searched():
    frontier = layout_render.pareto(results()["plans"]["duet"])
    assert [(p["usd_per_hour"], p["share"]) for p in frontier] == [(48.0, 0.96), (54.0, 0.98), (60.0, 0.992),
                                                                  (72.0, 0.995)]


def test_the_section_says_each_goal_met_or_missed_and_marks_the_chosen_fleet():
    text = layout_render.render([results()])
    assert "Duet 10 fast TP2 ($60/hour)" in text
    assert "against the best baseline 0.83x (missed: goal <= 0.75x)" in text
    assert "against all-standard TP4 0.71x (missed: goal <= 0.35x)" in text
    assert "| $60 | 20 | 99.20% | 10 fast TP2 **(chosen)** |" in text
    assert "| standard TP8; fast TP2 | not searched" in text
    assert "| llm-d-default | baseline | standard TP4; fast TP4 | none found | — | > $120 |" in text
    assert layout_render.render([]).endswith("No plan over layouts committed yet.")


def test_why_says_what_the_file_shows_about_duets_cost():
    data = results()
    assert layout_render.cheapest_by_fast_tp(data["plans"]["duet"]) == {2: 60.0, 4: 72.0}
    lines = layout_render.why(data)
    assert lines == ["Duet's fleet has no standard replica: parity lets the fast variant serve every task of this "
                     "traffic, so the saving over all-standard is the fast variant's, which the baselines share",
                     "Duet's cheapest fleet per fast TP size: TP2 $60, TP4 $72"]
    data["plans"]["least-loaded"].update(usd_per_hour=60.0, fleet={"standard": 0, "fast": 10},
                                         layout={"standard": TP4, "fast": TP2})
    assert layout_render.why(data)[0] == ("least-loaded reaches the target at Duet's cost with the same fleet: on "
                                          "replicas of one variant in one layout, routing changes nothing")


def test_a_role_mix_is_named_with_its_layout_wherever_duets_fleet_is_shown():
    data = results()
    duet = data["plans"]["duet"]
    split = _search({"standard": TP4, "fast": TP4}, [({"standard": 0, "fast": 4}, 0.993, 48.0),
                                                      ({"standard": 0, "fast": 3}, 0.95, 36.0)], {"standard": 0, "fast": 4})
    duet["layouts"].append({**split, "roles": "split"})
    duet.update(usd_per_hour=48.0, fleet={"standard": 0, "fast": 4}, layout={"standard": TP4, "fast": TP4},
                roles="split", replay_policy="duet@chunk=fast:2x8192+2048")
    data["layouts"]["roles"] = [{"name": "split", "large": {"standard": 16384, "fast": 8192}, "small": 2048,
                                 "prefill": 0}]
    assert layout_render.cheapest_by_roles(duet) == {"none": 60.0, "split": 48.0}
    text = layout_render.render([data])
    assert "Duet 4 fast TP4, roles split ($48/hour); against the best baseline 0.67x (met: goal <= 0.75x)" in text
    assert "| **duet** | duet | standard TP4; fast TP4; roles split | 4 fast TP4 | 16 | $48 |" in text
    assert "| $48 | 16 | 99.30% | 4 fast TP4, roles split **(chosen)** |" in text
    assert "Duet's role mixes split (first half standard's at 16384, fast's at 8192, the rest at 2048)" in text
    assert "Duet's fleet runs role mix split: `duet@chunk=fast:2x8192+2048`" in text


def test_an_all_standard_tp4_search_that_found_no_fleet_makes_the_ratio_a_bound():
    data = results()
    standard = data["plans"]["always-standard"]
    standard["layouts"][0].update(fleet=None, usd_per_hour=120.0)  # ten TP4 replicas, still short of the target
    assert layout_render.ratios(data)["all_standard_tp4"] == 0.5 and layout_render.all_standard_tp4_is_bound(data)
    assert "against all-standard TP4 ≤ 0.50x (missed, a bound: that search found no fleet: goal <= 0.35x)" in (
        layout_render.render([data]))


def test_an_all_standard_plan_of_its_own_on_the_same_traffic_is_the_tp4_comparator(tmp_path):
    import json

    layouts, further = tmp_path / "layouts", tmp_path / "all-standard"
    layouts.mkdir()
    further.mkdir()
    plan = results()
    plan["plans"]["always-standard"]["layouts"][0] = _search({"standard": TP4}, [({"standard": 10, "fast": 0}, 0.98, 120.0)],
                                                             None)
    (layouts / "h100-70b-w4a16.json").write_text(json.dumps(plan))
    assert layout_render.all_standard_tp4_is_bound(plan)
    searched = {**{k: v for k, v in plan.items() if k != "plans"}, "plans": {"always-standard (all-standard)": _plan(
        "all-standard", 348.0, {"standard": 29, "fast": 0}, {"standard": TP4},
        layouts=[_search({"standard": TP4}, [({"standard": 29, "fast": 0}, 0.9904, 348.0)], {"standard": 29, "fast": 0})])}}
    (further / "h100-70b-w4a16.json").write_text(json.dumps(searched))
    (loaded,) = layout_render.load(layouts, further)
    assert layout_render.ratios(loaded)["all_standard_tp4"] == round(60.0 / 348.0, 3)
    assert not layout_render.all_standard_tp4_is_bound(loaded)
    assert "29 standard TP4, $348/hour, sized in its own plan" in layout_render.render([loaded])
    (further / "h100-70b-w4a16.json").write_text(json.dumps({**searched, "rate_scale": 1.0}))  # other traffic: ignored
    (ignored,) = layout_render.load(layouts, further)
    assert "all_standard_plan" not in ignored and layout_render.all_standard_tp4_is_bound(ignored)
