"""The source-by-source section: a row per held-out source, the worst source per goal, and the
committed verdicts agree with the committed numbers."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.detect.training.by_source import GOALS, worst
from gateway.detect.training.data.sources import SOURCES
from loadtests.benchmarks.router.detector_by_source import RESULTS, SHARED, kept, render

RESULTS_NOW = json.loads(Path(RESULTS).read_text())


def test_every_source_is_held_out_once_in_every_recipe():
    for report in RESULTS_NOW["recipes"].values():
        assert set(report["by_source"]) == {*SOURCES, *SHARED}


def test_the_worst_source_verdicts_are_those_of_the_committed_numbers():
    assert "current" in RESULTS_NOW["recipes"]  # the baseline is always there
    for report in RESULTS_NOW["recipes"].values():
        assert report["worst"] == worst(report["by_source"])
        assert set(report["worst"]) == set(GOALS)


def test_the_section_has_a_row_per_source_and_a_line_per_goal():
    text = render(RESULTS_NOW)
    for recipe, report in RESULTS_NOW["recipes"].items():
        assert f"**{recipe}**" in text
        assert all(f"| {name} | " in text for name in report["by_source"])
    assert all(f"| {goal} {direction} {bound} |" in text for goal, (direction, bound) in GOALS.items())


def test_keep_replaces_the_recipes_re_run_and_keeps_the_others_with_their_commands():
    previous = {"command": "by_source --recipe current --recipe blend", "goals": {}, "mt_bench_turns": {"turn 1": {}},
                "recipes": {"current": {"by_source": {"a": 1}}, "blend": {"by_source": {"a": 2}}}}
    results = {"command": "by_source --recipe blend", "goals": {}, "recipes": {"blend": {"by_source": {"a": 3}}}}
    merged = kept(results, previous)
    assert list(merged["recipes"]) == ["current", "blend"] and merged["recipes"]["blend"] == {"by_source": {"a": 3}}
    assert merged["commands"] == {"current": previous["command"], "blend": results["command"]}
    assert merged["mt_bench_turns"] == previous["mt_bench_turns"] and merged["command"] == results["command"]
