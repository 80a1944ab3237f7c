"""The committed H100 fidelity results were written with the profiles and published figures as
they are now (the docs table is checked with every section by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import json

from loadtests.benchmarks.sim import h100_fidelity
from serving.sim.fidelity.published import load_points


def committed() -> dict:
    return json.loads(h100_fidelity.RESULTS.read_text())


def test_the_results_were_written_with_the_shipped_profiles_and_figures() -> None:
    result = committed()
    assert result["profiles"] == h100_fidelity.profile_versions(list(result["profiles"])), \
        "a profile changed since docs/results/h100-fidelity.json: rerun python -m loadtests.benchmarks.sim.h100_fidelity"
    points = load_points()
    assert [(p["row"], p["label"], p["published"]) for p in result["points"]] == \
        [(p.row, p.label, p.published) for p in points]
    assert all(p["before"] is not None for p in result["points"] if p["row"] < h100_fidelity.FIRST_ROW_AFTER_REFIT)


def test_the_fit_summary_counts_close_points_and_names_the_furthest() -> None:
    points = [{"row": 1, "label": "a", "fitted": True, "published": 10.0, "before": 20.0, "sim": 11.0},
              {"row": 2, "label": "b", "fitted": True, "published": 10.0, "before": 10.0, "sim": 5.0},
              {"row": 3, "label": "c", "fitted": False, "published": 1.0, "before": 1.0, "sim": 1.0}]
    fitted, others = h100_fidelity.fit_summary(points)
    assert "1 of 2 within 15%" in fitted and "(before the refit: 1)" in fitted and "row 2, b" in fitted
    assert "1 of 1 within 15%" in others


def test_points_on_derived_tensor_parallel_profiles_are_summed_apart_without_a_before() -> None:
    points = [{"row": 17, "label": "tp8", "fitted": False, "published": 1.0, "before": None, "sim": 1.3,
               "scenario": {"profile": "h100-70b-fp8", "base": "h100-70b-fp8-tp8"}},
              {"row": 18, "label": "tp2", "fitted": False, "published": 1.0, "before": None, "sim": 1.1,
               "scenario": {"profile": "h100-70b-fp8-tp2"}},
              {"row": 9, "label": "tp4", "fitted": False, "published": 1.0, "before": 1.0, "sim": 1.0,
               "scenario": {"profile": "h100-70b-fp8"}}]
    _, derived = h100_fidelity.fit_summary(points)
    assert "1 of 2 within 15%" in derived and "before the refit" not in derived and "row 17, tp8" in derived


def test_the_all_reduce_share_is_the_derived_profiles_own_and_set_beside_the_published() -> None:
    shares = h100_fidelity.allreduce_shares()
    assert list(shares) == ["2", "4", "8"] and shares["2"] < shares["4"] < shares["8"]
    (line,) = h100_fidelity.allreduce_lines({"profile": "p", "sim": {"4": 0.3}, "published": {"4": 0.25}})
    assert "TP4 30.0% (published 25.0%, sim / published 1.20)" in line
