"""A plan's counts written into a Duet config: kept as written otherwise, errors name the path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from loadtests.capacity.fleet_config import with_counts

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "deploy" / "render" / "h100-70b.yaml"


def test_counts_go_to_each_variants_replica_count():
    text = with_counts(GPU.read_text(), str(GPU), {"standard": 1, "fast": 5}, "duet plan ...")
    assert text.startswith("# Replica counts (replica_count) written by `duet plan ...`")
    variants = yaml.safe_load(text)["models"]["llama-3-70b"]["variants"]
    assert (variants["standard"]["replica_count"], variants["fast"]["replica_count"]) == (1, 5)
    assert variants["fast"]["allowed_tasks"] == ["chat", "coding", "agent", "extraction"]


@pytest.mark.parametrize("model, message", [
    ("other", "models.other: not in the config (models: llama-3-70b)"),
])
def test_an_unknown_model_is_named(model, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        with_counts(GPU.read_text(), str(GPU), {"standard": 1}, "c", model)
