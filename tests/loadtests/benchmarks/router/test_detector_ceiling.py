"""The encoder-ceiling section: every recipe judged on the same sources, the committed verdicts and
top-1 summaries agree with the committed per-source numbers, and the table shows each recipe."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.detect.training.by_source import worst
from gateway.detect.training.encoder_ceiling import RECIPES
from loadtests.benchmarks.router.detector_ceiling import RESULTS, render

RESULTS_NOW = json.loads(Path(RESULTS).read_text())


def test_every_recipe_is_judged_on_the_same_sources():
    assert set(RESULTS_NOW["recipes"]) == set(RECIPES)
    sources = [set(report["by_source"]) for report in RESULTS_NOW["recipes"].values()]
    assert all(s == sources[0] for s in sources) and "synth" not in sources[0] and len(sources[0]) >= 20


def test_the_summaries_are_those_of_the_per_source_numbers():
    for report in RESULTS_NOW["recipes"].values():
        assert report["worst"] == worst(report["by_source"])
        top1 = [r["top1"] for r in report["by_source"].values()]
        assert report["top1"]["worst"] == round(min(top1), 4)
        assert abs(report["top1"]["mean"] - sum(top1) / len(top1)) < 1e-4


def test_the_section_has_a_summary_row_and_a_table_per_recipe():
    text = render(RESULTS_NOW)
    for recipe in RECIPES:
        assert f"| {recipe} | " in text and f"**{recipe}**" in text
