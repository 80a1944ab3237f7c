"""A variant whose replicas run different engines, rendered for Kubernetes: one Deployment per
engine group (its count, its engine's arguments and GPUs, its group label, NIXL's side-channel
host from the pod's IP), a headless Service per group that the gateway's discovery selects to
give each pod its group's engine, and the variant's Service over every group. A variant of one
engine renders as before. A plan's role mix, written by ``duet plan --write-config`` from a
committed results file, renders to Deployments whose counts sum to the plan's."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes_validate
import pytest
import yaml

from gateway.config import parse_config
from gateway.config.engine_groups import GROUP_LABEL
from gateway.deploy.render import GPU_EXAMPLE, render
from gateway.discovery.api import ApiSettings, KubernetesApi
from gateway.discovery.kubernetes import KubernetesSource
from gateway.domain import EngineConfig, EngineRole
from gateway.fleet.capacity.fleet_config import with_counts
from gateway.fleet.commands.plan import planned_fleet
from gateway.fleet.world.replica_sets import REPLICA_SETS
from tests.deploy.tools import require
from tests.gateway.discovery.fake_api import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]
NIXL = "NixlConnector"
K8S_VERSION = "1.32.0"
PLAN = ROOT / "docs" / "results" / "capacity" / "layouts" / "h100-70b-w4a16.json"
GROUPS = [
    {"count": 2, "engine": {"role": "prefill", "kv_connector": NIXL, "max_num_batched_tokens": 16384}},
    {"count": 1, "engine": {"role": "decode", "kv_connector": NIXL, "max_num_batched_tokens": 512, "max_num_seqs": 256,
                            "tensor_parallel_size": 8}},
    {"count": 3, "engine": {"max_num_batched_tokens": 2048}},
]
NAMES = {"vllm-llama-3-70b-standard-prefill-nixl-c16384": 2, "vllm-llama-3-70b-standard-decode-nixl-c512-s256-tp8": 1,
         "vllm-llama-3-70b-standard-c2048": 3}


def example(autoscaled: bool = False) -> dict[str, Any]:
    """The GPU example with the engine-role filter P/D replicas need; fixed counts unless ``autoscaled``."""
    raw: dict[str, Any] = yaml.safe_load((ROOT / GPU_EXAMPLE).read_text())
    if not autoscaled:
        raw["models"]["llama-3-70b"].pop("autoscaling")
    raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
    for profile in raw["routing"]["profiles"].values():
        profile["filters"].append("engine-role")
    return raw


def grouped(tmp_path: Path, autoscaled: bool = False) -> Path:
    raw = example(autoscaled)
    standard = raw["models"]["llama-3-70b"]["variants"]["standard"]
    del standard["replicas"]
    standard["engine_groups"] = GROUPS
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def objects(files: dict[str, str], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(files["overlays/gpu/vllm.yaml"])
            if doc and doc["kind"] == kind}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return render(grouped(tmp_path_factory.mktemp("groups")), "k8s-gpu")


def test_each_engine_group_is_a_deployment_of_its_count_engine_and_gpus(files: dict[str, str]) -> None:
    deployments = objects(files, "Deployment")
    assert {name: d["spec"]["replicas"] for name, d in deployments.items() if "standard" in name} == NAMES
    prefill = container(deployments["vllm-llama-3-70b-standard-prefill-nixl-c16384"])
    decode = container(deployments["vllm-llama-3-70b-standard-decode-nixl-c512-s256-tp8"])
    chunked = container(deployments["vllm-llama-3-70b-standard-c2048"])
    assert json.loads(flag(prefill["args"], "--kv-transfer-config") or "") == {"kv_connector": NIXL, "kv_role": "kv_producer"}
    assert json.loads(flag(decode["args"], "--kv-transfer-config") or "") == {"kv_connector": NIXL, "kv_role": "kv_consumer"}
    assert "--kv-transfer-config" not in chunked["args"]
    assert [flag(c["args"], "--max-num-batched-tokens") for c in (prefill, decode, chunked)] == ["16384", "512", "2048"]
    assert flag(decode["args"], "--max-num-seqs") == "256" and decode["args"].count("--max-num-seqs") == 1
    assert [flag(c["args"], "--tensor-parallel-size") for c in (prefill, decode, chunked)] == ["4", "8", "4"]
    assert [c["resources"]["limits"]["nvidia.com/gpu"] for c in (prefill, decode, chunked)] == ["4", "8", "4"]
    assert decode["resources"]["requests"]["nvidia.com/gpu"] == "8"


def test_a_groups_pods_carry_its_label_and_nixl_groups_their_side_channel_host(files: dict[str, str]) -> None:
    for name, deployment in objects(files, "Deployment").items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        env = {e["name"]: e for e in container(deployment)["env"]}
        side_channel = env.get("VLLM_NIXL_SIDE_CHANNEL_HOST")
        if name in NAMES:
            assert labels[GROUP_LABEL] == name.removeprefix("vllm-llama-3-70b-standard-")
            assert labels["duet.dev/variant"] == "standard"
        else:
            assert GROUP_LABEL not in labels
        if "nixl" in name:
            assert side_channel == {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}
            assert {"name": "nixl", "containerPort": 5600} in container(deployment)["ports"]
        else:
            assert side_channel is None


def test_the_variants_service_selects_every_group_and_each_group_has_a_headless_one(files: dict[str, str]) -> None:
    services, deployments = objects(files, "Service"), objects(files, "Deployment")
    pods = {name: d["spec"]["template"]["metadata"]["labels"] for name, d in deployments.items()}
    variant = services["vllm-llama-3-70b-standard"]["spec"]["selector"]
    assert [name for name, labels in pods.items() if variant.items() <= labels.items()] == list(NAMES)
    for name in NAMES:
        service = services[name]
        assert service["spec"]["clusterIP"] == "None"
        assert [d for d, labels in pods.items() if service["spec"]["selector"].items() <= labels.items()] == [name]
        # Prometheus scrapes through the variant's Service only: one target per pod
        assert "app.kubernetes.io/name" not in service["metadata"]["labels"]


def test_the_overlay_builds_and_every_object_passes_the_kubernetes_schemas(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for name, text in render(grouped(tmp_path), "k8s-gpu").items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    built = subprocess.run([require("kubectl"), "kustomize", str(out / "overlays" / "gpu")], capture_output=True,
                           text=True, check=True)
    checked = 0
    for obj in yaml.safe_load_all(built.stdout):
        if obj and obj["kind"] not in {"ServiceMonitor", "PrometheusRule"}:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
            checked += 1
    assert checked > len(NAMES) * 2


def slices_of(files: dict[str, str]) -> dict[str, Any]:
    """The EndpointSlices the cluster would make: per Service, its labels (the controller copies
    them) and one ready endpoint per pod its selector matches."""
    deployments = objects(files, "Deployment")
    items = []
    for name, service in objects(files, "Service").items():
        endpoints = [{"addresses": [f"10.0.{n}.{i}"], "conditions": {"ready": True},
                      "targetRef": {"kind": "Pod", "name": f"{d}-5d4f-{i}"}}
                     for n, (d, deployment) in enumerate(deployments.items())
                     if service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
                     for i in range(deployment["spec"]["replicas"])]
        labels = {**service["metadata"]["labels"], "kubernetes.io/service-name": name}
        items.append({"metadata": {"name": f"{name}-x1", "labels": labels}, "addressType": "IPv4", "endpoints": endpoints})
    return {"kind": "EndpointSliceList", "items": items}


def test_the_deployed_gateway_finds_every_groups_pods_with_its_engine(files: dict[str, str]) -> None:
    """vLLM reports no role: each pod's engine comes from the group Service it was found through."""
    config = parse_config(files["overlays/gpu/duet.yaml"])
    targets = {d.variant: d for d in config.discovery}

    async def listed() -> dict[str, tuple[Any, ...]]:
        server = await FakeApiServer(slices_of(files)).start()
        server.by_labels = True
        try:
            async with aiohttp.ClientSession() as session:
                api = KubernetesApi(ApiSettings(server.url, token_path=None, ca_path=None, namespace="duet"), session)
                return {v: await KubernetesSource(t, api).list_replicas() for v, t in targets.items()}
        finally:
            await server.stop()

    found = asyncio.run(listed())
    engines = {r.id.rsplit("/", 1)[1].rsplit("-5d4f-", 1)[0]: r.engine for r in found["standard"]}
    assert len(found["standard"]) == 6 and len(found["fast"]) == 2
    assert engines == {
        "vllm-llama-3-70b-standard-prefill-nixl-c16384": EngineConfig(EngineRole.PREFILL, 16384, None, NIXL),
        "vllm-llama-3-70b-standard-decode-nixl-c512-s256-tp8": EngineConfig(EngineRole.DECODE, 512, 256, NIXL),
        "vllm-llama-3-70b-standard-c2048": EngineConfig(EngineRole.BOTH, 2048)}
    assert {r.engine for r in found["fast"]} == {EngineConfig()}


def test_a_variant_of_one_engine_renders_as_before(tmp_path: Path) -> None:
    """Same names, no group label, no headless Service: a running cluster sees no change."""
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(example(), sort_keys=False))
    files = render(path, "k8s-gpu")
    assert list(objects(files, "Deployment")) == list(objects(files, "Service")) == [
        "vllm-llama-3-70b-standard", "vllm-llama-3-70b-fast"]
    assert GROUP_LABEL not in files["overlays/gpu/vllm.yaml"] and "clusterIP" not in files["overlays/gpu/vllm.yaml"]
    assert "engine_groups" not in files["overlays/gpu/duet.yaml"]


def test_listed_replicas_of_several_engines_render_as_groups(tmp_path: Path) -> None:
    raw = example()
    standard = raw["models"]["llama-3-70b"]["variants"]["standard"]
    standard["replicas"][0]["engine"] = {"role": "prefill", "kv_connector": NIXL}
    standard["replicas"][1]["engine"] = {"role": "decode", "kv_connector": NIXL}
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    files = render(path, "k8s-gpu")
    assert {n: d["spec"]["replicas"] for n, d in objects(files, "Deployment").items()} == {
        "vllm-llama-3-70b-standard-prefill-nixl": 1, "vllm-llama-3-70b-standard-decode-nixl": 1,
        "vllm-llama-3-70b-fast": 2}
    deployed = yaml.safe_load(files["overlays/gpu/duet.yaml"])["models"]["llama-3-70b"]["variants"]["standard"]
    assert deployed["engine_groups"] == [{"count": 1, "engine": {"role": "prefill", "kv_connector": NIXL}},
                                         {"count": 1, "engine": {"role": "decode", "kv_connector": NIXL}}]


def test_an_autoscaled_variant_of_several_groups_renders_each_group_for_its_autoscaler(tmp_path: Path) -> None:
    """Formerly refused: now each group's Deployment leaves its count to its autoscaler (no
    spec.replicas), the overlay builds and passes the schemas, the deployed config keeps the
    groups' counts (the gauge splits by them), and compose, which has no autoscaler, still runs
    every replica."""
    path = grouped(tmp_path, autoscaled=True)
    files = render(path, "k8s-gpu")
    deployments = objects(files, "Deployment")
    assert set(NAMES) < set(deployments)
    assert all("replicas" not in d["spec"] for d in deployments.values())
    deployed = yaml.safe_load(files["overlays/gpu/duet.yaml"])["models"]["llama-3-70b"]
    assert [g["count"] for g in deployed["variants"]["standard"]["engine_groups"]] == list(NAMES.values())
    gauge_groups = parse_config(files["overlays/gpu/duet.yaml"]).models["llama-3-70b"].engine_groups["standard"]
    assert [(name, share.count) for name, share in gauge_groups] == [
        (name.removeprefix("vllm-llama-3-70b-standard-"), count) for name, count in NAMES.items()]
    out = tmp_path / "out"
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    built = subprocess.run([require("kubectl"), "kustomize", str(out / "overlays" / "gpu")], capture_output=True,
                           text=True, check=True)
    scaled: Counter[str] = Counter()
    for obj in yaml.safe_load_all(built.stdout):
        if obj and obj["kind"] not in {"ServiceMonitor", "PrometheusRule"}:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
            if obj["kind"] == "HorizontalPodAutoscaler":
                scaled[obj["spec"]["scaleTargetRef"]["name"]] += 1
    assert scaled == Counter([*NAMES, "vllm-llama-3-70b-fast", "duet-gateway"])  # one each, the gateway's from base
    services = yaml.safe_load(render(path, "compose-gpu")["compose.yaml"])["services"]
    assert sum(name.startswith("vllm-llama-3-70b-standard-") for name in services) == 6  # compose has no autoscaler


def plan_config(tmp_path: Path) -> Path:
    """``duet plan --write-config``'s writing, on the committed plan and the config it sizes: the
    GPU example with the plan's fast profile (W4A16), at fixed counts."""
    results = json.loads(PLAN.read_text())
    raw = example()
    raw["routing"]["plugins"].pop()  # the plan adds the engine-role filter itself
    for profile in raw["routing"]["profiles"].values():
        profile["filters"].remove("engine-role")
    raw["models"]["llama-3-70b"]["variants"]["fast"]["launch_profile"] = "h100-70b-w4a16"
    source = tmp_path / "duet.yaml"
    source.write_text(yaml.safe_dump(raw, sort_keys=False))
    profiles = {v.name: v.profile for v in REPLICA_SETS[results["replica_set"]].variants}
    written = tmp_path / "duet.sized.yaml"
    written.write_text(with_counts(source.read_text(), str(source), planned_fleet(results["plans"]["duet"], profiles),
                                   results["command"]))
    return written


def test_the_plans_role_mix_written_into_the_config_renders_to_the_plans_counts(tmp_path: Path) -> None:
    results = json.loads(PLAN.read_text())
    duet = results["plans"]["duet"]
    assert duet["roles"] == "pd+split" and duet["fleet"] == {"standard": 6, "fast": 0}
    written = plan_config(tmp_path)
    config = parse_config(written.read_text())
    assert config.policy.disaggregation.rule == "duet"
    files = render(written, "k8s-gpu")
    deployments = objects(files, "Deployment")
    for variant, count in duet["fleet"].items():
        assert sum(d["spec"]["replicas"] for d in deployments.values()
                   if d["metadata"]["labels"]["duet.dev/variant"] == variant) == count
    standard = {name: container(d) for name, d in deployments.items() if "standard" in name}
    roles = {name: json.loads(flag(c["args"], "--kv-transfer-config") or "{}").get("kv_role") for name, c in standard.items()}
    assert roles == {"vllm-llama-3-70b-standard-prefill-nixl-c16384-tp4": "kv_producer",
                     "vllm-llama-3-70b-standard-both-nixl-c16384-tp4": "kv_both",
                     "vllm-llama-3-70b-standard-both-nixl-c2048-tp4": "kv_both"}
    # the replay's rule for 6 standard replicas: @pd=2:0:duet@chunk=standard:3x16384+2048
    assert duet["replay_policy"] == "duet@pd=2:0:duet@chunk=standard:3x16384+2048"
    assert [deployments[n]["spec"]["replicas"] for n in roles] == [2, 1, 3]
    assert {c["resources"]["limits"]["nvidia.com/gpu"] for c in standard.values()} == {"4"}
    assert parse_config(files["overlays/gpu/duet.yaml"]).discovery[0].groups


def test_an_inference_pool_selects_every_groups_pods_and_its_picker_knows_their_engines(tmp_path: Path) -> None:
    files = render(grouped(tmp_path), "gie")
    (pool,) = [doc for doc in yaml.safe_load_all(files["gie/inferencepool.yaml"]) if doc]
    pods = {doc["metadata"]["name"]: doc["spec"]["template"]["metadata"]["labels"]
            for doc in yaml.safe_load_all(files["gie/vllm.yaml"]) if doc and doc["kind"] == "Deployment"}
    selector = pool["spec"]["selector"]["matchLabels"]
    assert [name for name, labels in pods.items() if selector.items() <= labels.items()] == [*NAMES, "vllm-llama-3-70b-fast"]
    (target,) = parse_config(files["gie/duet.yaml"]).pools
    for name, labels in pods.items():
        assert target.engine_of(labels["duet.dev/variant"], labels.get(GROUP_LABEL)) is not None, name
    assert target.engine_of("standard") is None  # a pod of no group of a grouped variant is left out
