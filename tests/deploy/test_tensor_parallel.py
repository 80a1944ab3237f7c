"""A variant's TP size rendered: ``--tensor-parallel-size`` in its vLLM arguments and that many
GPUs in its resources (Kubernetes) or device reservations (compose), validated first: a size
outside one NVLink domain, one whose GPUs cannot hold the weights, or a replica cost that counts
other GPUs is a config error naming the path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.deploy.render import GPU_EXAMPLE, render
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = "models.llama-3-70b.variants"


def config_with(tmp_path: Path, **engines: dict[str, Any]) -> Path:
    raw = yaml.safe_load((ROOT / GPU_EXAMPLE).read_text())
    for variant, engine in engines.items():
        raw["models"]["llama-3-70b"]["variants"][variant]["engine"] = engine
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def flag_value(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_kubernetes_renders_each_variants_tp_size_and_its_gpus(tmp_path: Path) -> None:
    files = render(config_with(tmp_path, fast={"tensor_parallel_size": 2}), "k8s-gpu")
    deployments = {doc["metadata"]["name"]: doc["spec"]["template"]["spec"]["containers"][0]
                   for doc in yaml.safe_load_all(files["overlays/gpu/vllm.yaml"]) if doc and doc["kind"] == "Deployment"}
    fast, standard = deployments["vllm-llama-3-70b-fast"], deployments["vllm-llama-3-70b-standard"]
    assert flag_value(fast["args"], "--tensor-parallel-size") == "2" and fast["args"].count("--tensor-parallel-size") == 1
    assert fast["resources"]["requests"]["nvidia.com/gpu"] == "2" == fast["resources"]["limits"]["nvidia.com/gpu"]
    assert flag_value(standard["args"], "--tensor-parallel-size") == "4"  # the profile's own
    assert standard["resources"]["limits"]["nvidia.com/gpu"] == "4"


def test_compose_gives_each_replica_its_own_gpus(tmp_path: Path) -> None:
    files = render(config_with(tmp_path, fast={"tensor_parallel_size": 2}), "compose-gpu")
    services = yaml.safe_load(files["compose.yaml"])["services"]
    devices = {name: s["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"]
               for name, s in services.items() if name.startswith("vllm-")}
    assert [len(ids) for ids in devices.values()] == [4, 4, 2, 2]
    every = [gpu for ids in devices.values() for gpu in ids]
    assert len(every) == len(set(every)) == 12  # no GPU given twice
    assert flag_value(services["vllm-llama-3-70b-fast-1"]["command"], "--tensor-parallel-size") == "2"


@pytest.mark.parametrize(("engines", "path", "message"), [
    ({"fast": {"tensor_parallel_size": 3}}, f"{VARIANTS}.fast.engine.tensor_parallel_size", "1, 2, 4 or 8"),
    ({"standard": {"tensor_parallel_size": 2}}, f"{VARIANTS}.standard.engine.tensor_parallel_size",
     "'h100-70b-bf16' does not fit at TP2"),
    ({"fast": {"tensor_parallel_size": 1}}, f"{VARIANTS}.fast.engine.tensor_parallel_size",
     "'h100-70b-fp8' does not fit at TP1"),
])
def test_a_tp_size_that_cannot_run_is_a_config_error_naming_its_path(tmp_path, engines, path, message) -> None:
    with pytest.raises(ConfigError) as caught:
        render(config_with(tmp_path, **engines), "k8s-gpu")
    assert path in str(caught.value) and message in str(caught.value)


def test_a_replica_cost_counting_other_gpus_than_the_tp_size_is_refused(tmp_path: Path) -> None:
    raw = yaml.safe_load((ROOT / GPU_EXAMPLE).read_text())
    fast = raw["models"]["llama-3-70b"]["variants"]["fast"]
    fast.pop("price", None)
    fast["replica_cost"] = {"gpus": 4, "usd_per_gpu_hour": 3.0}
    fast["engine"] = {"tensor_parallel_size": 2}
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError, match=rf"{VARIANTS}.fast.replica_cost.gpus: 4, but each replica runs on 2 GPUs"):
        render(path, "k8s-gpu")
    fast["replica_cost"]["gpus"] = 2
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert "overlays/gpu/vllm.yaml" in render(path, "k8s-gpu")


def test_a_plans_layout_written_into_the_config_is_what_kubernetes_renders(tmp_path: Path) -> None:
    from gateway.fleet.capacity.fleet_config import PlannedFleet, with_counts

    example = (ROOT / GPU_EXAMPLE).read_text()
    planned = PlannedFleet({"standard": 1, "fast": 6}, {"standard": "h100-70b-bf16", "fast": "h100-70b-fp8"}, None,
                           {"standard": {"tensor_parallel_size": 4},
                            "fast": {"tensor_parallel_size": 2, "max_num_batched_tokens": 16384}})
    path = tmp_path / "duet.yaml"
    path.write_text(with_counts(example, str(path), planned, "duet plan ..."))
    files = render(path, "k8s-gpu")
    containers = {doc["metadata"]["name"]: doc["spec"]["template"]["spec"]["containers"][0]
                  for doc in yaml.safe_load_all(files["overlays/gpu/vllm.yaml"]) if doc and doc["kind"] == "Deployment"}
    fast, standard = containers["vllm-llama-3-70b-fast"], containers["vllm-llama-3-70b-standard"]
    assert flag_value(fast["args"], "--tensor-parallel-size") == "2"
    assert flag_value(fast["args"], "--max-num-batched-tokens") == "16384"
    assert fast["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert flag_value(standard["args"], "--tensor-parallel-size") == "4"
    assert standard["resources"]["limits"]["nvidia.com/gpu"] == "4"
