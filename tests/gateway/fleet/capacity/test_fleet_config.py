"""A plan's counts written into a Duet config: kept as written otherwise, errors name the path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.fleet.capacity.fleet_config import PlannedFleet, with_counts

ROOT = Path(__file__).resolve().parents[4]
GPU = ROOT / "deploy" / "render" / "h100-70b.yaml"
PROFILES = {"standard": "h100-70b-bf16", "fast": "h100-70b-fp8"}


def test_counts_go_to_each_variants_replica_count():
    text = with_counts(GPU.read_text(), str(GPU), PlannedFleet({"standard": 1, "fast": 5}, PROFILES), "duet plan ...")
    assert text.startswith("# Replica counts (replica_count), engines and autoscaling utilisation written by `duet plan ...`")
    variants = yaml.safe_load(text)["models"]["llama-3-70b"]["variants"]
    assert (variants["standard"]["replica_count"], variants["fast"]["replica_count"]) == (1, 5)
    assert variants["fast"]["allowed_tasks"] == ["chat", "coding", "agent", "extraction"]


def gpu_config(autoscaling):
    """The GPU example config with ``autoscaling`` as its model's section (None: without one)."""
    raw = yaml.safe_load(GPU.read_text())
    model = raw["models"]["llama-3-70b"]
    model.pop("autoscaling", None)
    if autoscaling is not None:
        model["autoscaling"] = autoscaling
    return yaml.safe_dump(raw, sort_keys=False)


def test_an_autoscaled_model_gets_the_utilisation_its_fleet_ran_at():
    text = with_counts(gpu_config({"autoscaler": "keda", "utilisation_by_variant": {"standard": 0.9}}), str(GPU),
                       PlannedFleet({"standard": 1, "fast": 5}, PROFILES, {"standard": 0.3, "fast": 0.08}), "c")
    autoscaling = yaml.safe_load(text)["models"]["llama-3-70b"]["autoscaling"]
    assert autoscaling == {"autoscaler": "keda", "utilisation_by_variant": {"standard": 0.3, "fast": 0.08}}


def test_a_fixed_fleet_stays_fixed():
    planned = PlannedFleet({"standard": 1, "fast": 5}, PROFILES, {"standard": 0.3, "fast": 0.08})
    text = with_counts(gpu_config(None), str(GPU), planned, "c")
    assert "autoscaling" not in yaml.safe_load(text)["models"]["llama-3-70b"]


@pytest.mark.parametrize("profiles, model, message", [
    (PROFILES, "other", "models.other: not in the config (models: llama-3-70b)"),
    ({**PROFILES, "fast": "h100-70b-w4a16"}, None,
     "models.llama-3-70b.variants.fast.launch_profile: 'h100-70b-fp8', but the plan sizes replicas of 'h100-70b-w4a16'"),
])
def test_errors_name_the_path(profiles, model, message):
    with pytest.raises(ValueError) as info:
        with_counts(GPU.read_text(), str(GPU), PlannedFleet({"standard": 1, "fast": 1}, profiles), "c", model)
    assert str(info.value) == message


def test_a_layout_goes_to_each_variants_engine_and_its_replica_cost_gpus():
    raw = yaml.safe_load(GPU.read_text())
    fast = raw["models"]["llama-3-70b"]["variants"]["fast"]
    fast.pop("price", None)
    fast["replica_cost"] = {"gpus": 4, "usd_per_gpu_hour": 3.0}
    text = yaml.safe_dump(raw, sort_keys=False)
    planned = PlannedFleet({"standard": 1, "fast": 3}, PROFILES, None,
                           {"fast": {"tensor_parallel_size": 2, "max_num_batched_tokens": 2048},
                            "standard": {"tensor_parallel_size": 4}})
    written = yaml.safe_load(with_counts(text, "duet.yaml", planned, "duet plan ..."))
    variants = written["models"]["llama-3-70b"]["variants"]
    assert variants["fast"]["engine"] == {"tensor_parallel_size": 2, "max_num_batched_tokens": 2048}
    assert variants["fast"]["replica_cost"]["gpus"] == 2 and variants["standard"]["engine"] == {"tensor_parallel_size": 4}
