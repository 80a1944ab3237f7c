"""The detector's section says which split trained, tuned and measured what, before its tables."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests.benchmarks.router.detector import RESULTS, render


def test_the_section_opens_with_each_splits_use_and_the_validation_numbers():
    results = json.loads(Path(RESULTS).read_text())
    text = render(results)
    head = text.split("| split |")[0]
    assert all(f"**{name}**: {use}" in head for name, use in results["splits"].items())
    assert "validation" in results["splits"] and "held out" in results["splits"]
    assert f"leak rate of {results['model']['validation']['leak_rate']:.4f}" in head
