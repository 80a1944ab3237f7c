"""The detector's gateway-cost section: every round's pair, and the verdict from the median ratio."""

from __future__ import annotations

from loadtests.benchmarks.overhead.detector_twin import render


def _results(*pairs: tuple[float, float]) -> dict:
    rounds = [{"bench": on, "bench-detector-off": off} for on, off in pairs]
    ratios = sorted(on / off for on, off in pairs)
    return {"command": "cmd", "hardware_class": "avx512", "detector": "blend", "rounds": rounds,
            "median_ratio": ratios[len(ratios) // 2]}


def test_each_round_and_the_verdict_from_the_median() -> None:
    text = render(_results((550.0, 500.0), (530.0, 500.0), (700.0, 500.0)))
    assert "| 3 | 700.0 | 500.0 | 1.40 |" in text
    assert "**1.10** — goal met" in text
    assert "goal missed" in render(_results((560.0, 500.0), (600.0, 500.0), (540.0, 500.0)))
