"""The knee-sweep section: cells, verdicts against the goals, the plot, and the committed section."""

from __future__ import annotations

import pytest

from gateway.fleet.sweep.render import load_cell, plot, render, trailing, verdict
from gateway.fleet.sweep.results import compare


def estimate(kind, mean, ci95=None, nonmonotone=0):
    return {"kind": kind, "mean": mean, "ci95": ci95, "seeds": 5, "nonmonotone_seeds": nonmonotone}


@pytest.mark.parametrize(("e", "cell"), [
    (estimate("exact", 1.234, 0.05), "x1.23 ± 0.05"),
    (estimate("at_least", 2.0), "≥ x2"),
    (estimate("below", 0.35), "< x0.35"),
    (estimate("exact", 1.5, 0.1, nonmonotone=1), "x1.5 ± 0.1 †"),
    (estimate("undetermined", None), "undetermined"),
])
def test_a_crossing_cell_says_when_it_is_a_bound(e, cell):
    assert load_cell(e) == cell


@pytest.mark.parametrize(("ratio", "goal", "expected"), [
    (estimate("exact", 1.3, 0.05), 1.2, "**met** (interval clears it)"),
    (estimate("exact", 1.25, 0.1), 1.2, "**met** (within the interval)"),
    (estimate("exact", 0.95, 0.02), 1.0, "**not met**"),
    (estimate("at_least", 1.3), 1.2, "**met** (a lower bound)"),
    (estimate("at_least", 1.1), 1.2, "undetermined"),
    (estimate("at_most", 0.9), 1.0, "**not met** (an upper bound)"),
    (estimate("undetermined", None), 1.0, "undetermined"),
])
def test_the_verdict_against_a_goal(ratio, goal, expected):
    assert verdict(ratio, goal).startswith(expected)


def exact(value):
    return {"kind": "exact", "value": value, "nonmonotone": False}


def grid_result():
    runs = [{"seed": 0, "start_s": 0.0, "end_s": 1200.0, "requests": 1000, "rate_rps_at_x1": 0.83}]
    rows = {p: [{"load": x, "rate_rps": 0.83 * x, "good_fraction": g, "ci95": 0.01, "runs": [g]} for x, g in shares]
            for p, shares in {"least-loaded": [(1.0, 0.995), (2.0, 0.9)], "duet": [(1.0, 0.999), (2.0, 0.97)]}.items()}
    crossing = {"constraint": "good_fraction>=0.99", "level": 0.99,
                "policies": {"least-loaded": {"load": estimate("exact", 1.05, 0.01), "runs": [exact(1.04), exact(1.06)]},
                             "duet": {"load": estimate("exact", 1.3, 0.02), "runs": [exact(1.3), exact(1.3)]}},
                "comparison": {"best_baseline": "least-loaded", "ratio": estimate("exact", 1.24, 0.02)}}
    for entry in crossing["policies"].values():
        entry["rate_rps"] = entry["load"]
    return {"command": "duet replay ...", "kind": "grid", "replicas": "h100-70b:standard=1,fast=3",
            "replica_set": "h100-70b", "seeds": 1, "prior_error": 0.3, "output_length": "learned (max_tokens only)",
            "window": {"name": "tuning", "covered_s": [0.0, 1200.0], "runs": runs}, "loads": [1.0, 2.0],
            "grid": rows, "crossings": [crossing]}


def test_the_section_opens_with_duet_against_the_best_baseline_and_the_goal(tmp_path):
    text = render([("h100-70b-tuning", grid_result())])
    summary = text.split("### ")[0]
    assert "| `h100-70b-tuning` | good_fraction>=0.99 | x1.3 ± 0.02 | least-loaded | x1.05 ± 0.01 | 1.24x ± 0.15 | ≥ 1x | " \
           "**met** (interval clears it) |" in summary
    assert "| duet | 99.90% ± 1.00% | 97.00% ± 1.00% |" in text
    assert "![good share against load, h100-70b-tuning](results/knee/h100-70b-tuning.png)" in text
    png = plot(grid_result(), tmp_path / "knee.png")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_duet_fixed_is_the_subject_and_neither_duet_policy_is_a_baseline():
    result = grid_result()
    crossing = result["crossings"][0]
    crossing["policies"]["duet-fixed"] = {"load": estimate("exact", 1.5, 0.0), "runs": [exact(1.5), exact(1.5)]}
    crossing["policies"]["duet-fixed"]["rate_rps"] = crossing["policies"]["duet-fixed"]["load"]
    comparison = compare(crossing)
    assert (comparison["subject"], comparison["best_baseline"]) == ("duet-fixed", "least-loaded")
    del crossing["policies"]["least-loaded"]
    assert compare(crossing) is None  # duet alone is no baseline for duet-fixed


def test_a_load_where_duet_trails_beyond_the_interval_is_named():
    result = grid_result()
    assert trailing(result) == []  # duet leads at both loads
    result["grid"]["duet"][1]["good_fraction"] = 0.85  # 5 points behind least-loaded's 0.90, intervals 1 point
    assert trailing(result) == [(2.0, 5.0, 1.0)]
    assert "x2 (5.00 points behind, interval 1.00)" in render([("h100-70b-tuning", result)])
