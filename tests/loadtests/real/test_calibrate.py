"""The committed real calibration (loadtests/real/calibrate.py, docs/results/calibration-*.json)
is what docs/routing.md quotes, and holds together: a speed block the gateway accepts, recording
the hardware class it was measured on, with ratios that are its own against the profile's prior."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.config.speed_section import SpeedSection

REPO = Path(__file__).resolve().parents[3]
RESULTS = sorted((REPO / "docs" / "results").glob("calibration-*.json"))


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_the_result_holds_together_and_the_docs_quote_it(path: Path) -> None:
    result = json.loads(path.read_text())
    speed = SpeedSection.model_validate(result["speed"])
    assert speed.calibration is not None
    assert path.name == f"calibration-{result['hardware_class']}.json" == f"calibration-{speed.calibration.hardware_class}.json"
    for key, ratio in result["measured_over_prior"].items():
        assert ratio == pytest.approx(result["speed"][key] / result["profile_prior"][key], rel=1e-2), key
    assert len({s["prompt_tokens"] for s in result["samples"]["prefill"]}) >= 3
    routing = (REPO / "docs" / "routing.md").read_text()
    assert result["summary"] in routing and path.name in routing


def test_there_is_a_real_calibration_to_quote() -> None:
    assert RESULTS, "docs/results/calibration-*.json: run loadtests/real/calibrate.py"
