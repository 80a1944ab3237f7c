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


def test_a_run_with_the_numpy_gateway_shows_both_ratios() -> None:
    rounds = [{"bench": 520.0, "bench-detector-numpy": 600.0, "bench-detector-off": 400.0}]
    text = render({"command": "cmd", "hardware_class": "amx", "detector": "blend", "core": "native", "rounds": rounds,
                   "median_ratio": 1.3, "median_ratio_numpy": 1.5})
    assert "its arithmetic native, and the same detector read in Python with numpy's arithmetic" in text
    assert "| 1 | 520.0 | 600.0 | 400.0 | 1.30 | 1.50 |" in text
    assert "**1.30** — goal missed; with numpy's arithmetic 1.50." in text


def test_a_run_of_the_compiled_reading_says_what_was_compiled() -> None:
    rounds = [{"bench": 440.0, "bench-detector-numpy": 560.0, "bench-detector-off": 400.0}]
    text = render({"command": "cmd", "hardware_class": "amx", "detector": "blend", "core": "native",
                   "compiled": "reading and arithmetic", "rounds": rounds, "median_ratio": 1.1, "median_ratio_numpy": 1.4})
    assert "the default (blend) detector, its reading and arithmetic compiled, and the same detector read in Python" in text
