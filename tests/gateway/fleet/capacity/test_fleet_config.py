"""A plan's counts written into a Duet config: kept as written otherwise, errors name the path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.fleet.capacity.fleet_config import EngineGroup, PlannedFleet, role_groups, with_counts

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


LAYOUTS = ROOT / "docs" / "results" / "capacity" / "layouts" / "h100-70b-w4a16.json"


def test_the_committed_plans_role_mix_as_engine_groups():
    """pd+split over 6 standard replicas, as the replay laid it (@pd=2:0:duet@chunk=standard:3x16384+2048)."""
    plan = json.loads(LAYOUTS.read_text())["plans"]["duet"]
    groups, rule = role_groups(plan)
    nixl = {"kv_connector": "NixlConnector", "tensor_parallel_size": 4}
    assert groups == {"standard": [EngineGroup(2, {"role": "prefill", **nixl, "max_num_batched_tokens": 16384}),
                                   EngineGroup(1, {**nixl, "max_num_batched_tokens": 16384}),
                                   EngineGroup(3, {**nixl, "max_num_batched_tokens": 2048})],
                      "fast": []}
    assert rule == "duet"


def test_a_split_without_prefill_replicas_has_no_connector_and_no_rule():
    plan = {"roles": "split", "fleet": {"standard": 3, "fast": 1}, "layout": {"standard": {"tp": None, "chunk": None}},
            "replay_policy": "duet@chunk=standard:1x16384+2048"}
    assert role_groups(plan) == ({"standard": [EngineGroup(1, {"max_num_batched_tokens": 16384}),
                                               EngineGroup(2, {"max_num_batched_tokens": 2048})],
                                  "fast": [EngineGroup(1, {})]}, None)
    assert role_groups({"roles": None, "fleet": {"standard": 3}}) == ({}, None)


def test_engine_groups_replace_the_variants_engine_and_listed_replicas_and_the_roles_get_their_filter():
    raw = yaml.safe_load(gpu_config(None))
    raw["models"]["llama-3-70b"]["variants"]["standard"]["engine"] = {"max_num_seqs": 512}
    prefill = {"role": "prefill", "kv_connector": "NixlConnector", "max_num_batched_tokens": 16384}
    both = {"kv_connector": "NixlConnector", "max_num_batched_tokens": 2048}
    planned = PlannedFleet({"standard": 4, "fast": 1}, PROFILES,
                           groups={"standard": [EngineGroup(2, prefill), EngineGroup(2, both)],
                                   "fast": [EngineGroup(1, {"max_num_batched_tokens": 8192})]}, disaggregation="duet")
    written = yaml.safe_load(with_counts(yaml.safe_dump(raw), str(GPU), planned, "c"))
    standard, fast = (written["models"]["llama-3-70b"]["variants"][v] for v in ("standard", "fast"))
    assert standard["engine_groups"] == [{"count": 2, "engine": {**prefill, "max_num_seqs": 512}},
                                         {"count": 2, "engine": {**both, "max_num_seqs": 512}}]
    assert "engine" not in standard and "replicas" not in standard and standard["replica_count"] == 4
    assert fast["engine"] == {"max_num_batched_tokens": 8192} and len(fast["replicas"]) == 2  # one group: the variant's
    routing = written["routing"]
    assert routing["disaggregation"]["rule"] == "duet"
    assert [p["name"] for p in routing["plugins"] if p["type"] == "engine-role"] == ["engine-role"]
    assert all(profile["filters"].count("engine-role") == 1 for profile in routing["profiles"].values())
