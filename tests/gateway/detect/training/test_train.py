"""Retraining reproduces the shipped model file byte for byte (slow: ~15 s on an idle core)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.detect.model import MODEL_FILE
from gateway.detect.training import PROMPTS
from gateway.detect.training.train import main

pytestmark = pytest.mark.slow
SHIPPED = Path(__file__).resolve().parents[4] / "gateway" / "detect" / MODEL_FILE


def test_retraining_writes_the_shipped_model_file(tmp_path):
    if not (PROMPTS / "gsm8k_train.jsonl").exists():
        pytest.skip(f"the public prompts are not at {PROMPTS} (../shared/prompts beside the checkout)")
    out = tmp_path / MODEL_FILE
    assert main(["--out", str(out)]) == 0
    assert out.read_bytes() == SHIPPED.read_bytes()
