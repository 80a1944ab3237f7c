"""``duet deploy render --target gie``: kustomize builds it, core objects pass the Kubernetes
schemas and the CRDs Duet renders pass deploy/schemas (InferencePool v1, HTTPRoute v1, KEDA's
ScaledObject); the parts agree with each other (the route's pool exists, the pool selects the vLLM
pods and names the picker's Service and port, the picker's config reads the pods' variant label);
bad input is a config error naming its path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gateway.cli import main as duet
from gateway.config import load_config
from gateway.deploy.render import render, write
from gateway.errors import ConfigError
from tests.deploy.test_render import EXAMPLE, K8S_VERSION, by_name, kustomize

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = {"InferencePool": "inferencepool-v1.json", "HTTPRoute": "httproute-v1.json",
           "ScaledObject": "keda-scaledobject.json"}
NOT_SCHEMED = {"ServiceMonitor"}  # Prometheus Operator's: checked in tests/deploy/test_render.py's way (shape only)


def validator(kind: str) -> jsonschema.protocols.Validator:
    schema = json.loads((ROOT / "deploy" / "schemas" / SCHEMAS[kind]).read_text())
    return jsonschema.Draft202012Validator(schema)


def errors_of(obj: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator(obj["kind"]).iter_errors(obj)]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, list[dict[str, Any]]]:
    """The gie target of each example, written by the CLI and built by kustomize."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, args in {"cpu": ["--config", str(EXAMPLE["cpu"])], "gpu": ["--config", str(EXAMPLE["gpu"])],
                       "gpu-keda": ["--config", str(EXAMPLE["gpu"]), "--autoscaler", "keda"]}.items():
        where = tmp_path_factory.mktemp(f"gie-{name}")
        assert duet(["deploy", "render", "--target", "gie", *args, "--out", str(where)]) == 0
        out[name] = kustomize(where / "gie")
        out[f"{name}-config"] = [yaml.safe_load((where / "gie" / "duet.yaml").read_text())]
        (where / "gie" / "duet.yaml").rename(where / "duet.yaml")
        out[f"{name}-path"] = [{"path": str(where / "duet.yaml")}]
    return out


@pytest.mark.parametrize("name", ["cpu", "gpu", "gpu-keda"])
def test_every_object_passes_its_schema(built, name):
    objects = built[name]
    for obj in objects:
        if obj["kind"] in SCHEMAS:
            assert errors_of(obj) == [], obj["metadata"]["name"]
        elif obj["kind"] not in NOT_SCHEMED:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    kinds = {o["kind"] for o in objects}
    assert {"InferencePool", "HTTPRoute", "Deployment", "Service", "ServiceAccount", "Role", "RoleBinding",
            "ConfigMap", "ServiceMonitor"} <= kinds
    assert ("ScaledObject" in kinds) is name.endswith("keda")
    assert ("HorizontalPodAutoscaler" in kinds) is (name == "gpu")  # the GPU example autoscales its variants


def test_the_schemas_can_fail():
    pool = {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool", "metadata": {"name": "p"},
            "spec": {"selector": {"matchLabels": {"app": "vllm"}}, "targetPorts": [{"number": 8000}],
                     "endpointPickerRef": {"name": "duet-epp", "port": {"number": 9002}}}}
    assert errors_of(pool) == []
    for broken in ({"targetPorts": []}, {"targetPorts": [{"number": 8000 + i} for i in range(9)]},
                   {"selector": {"matchLabels": {}}}, {"endpointPickerRef": {"name": "duet-epp"}},  # a Service needs its port
                   {"endpointPickerRef": {"name": "e", "port": {"number": 9002}, "failureMode": "Open"}}):
        assert errors_of({**pool, "spec": {**pool["spec"], **broken}}), broken
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r"},
             "spec": {"rules": [{"backendRefs": [{"kind": "InferencePool"}]}]}}  # a backendRef needs its name
    assert errors_of(route)


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_the_route_the_pools_the_pods_and_the_picker_agree(built, name):
    objects = built[name]
    pools = by_name(objects, "InferencePool")
    (route,) = by_name(objects, "HTTPRoute").values()
    assert route["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                            "name": "inference-gateway"}]
    backends = [b for rule in route["spec"]["rules"] for b in rule["backendRefs"]]
    assert {(b["group"], b["kind"]) for b in backends} == {("inference.networking.k8s.io", "InferencePool")}
    assert {b["name"] for b in backends} == set(pools)

    config = built[f"{name}-config"][0]
    vllm = [d for d in by_name(objects, "Deployment").values() if d["metadata"]["name"].startswith("vllm-")]
    assert len(vllm) == sum(len(m["variants"]) for m in config["models"].values())
    for pool in pools.values():
        selector = pool["spec"]["selector"]["matchLabels"]
        selected = [d for d in vllm if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        model = pool["metadata"]["labels"]["duet.dev/model"]
        # Every variant of the pool's model is selected, and each pod says its variant in the label the picker reads.
        label = config["models"][model]["inference_pool"]["variant_label"]
        assert sorted(d["spec"]["template"]["metadata"]["labels"][label] for d in selected) == sorted(
            config["models"][model]["variants"])
        port = pool["spec"]["targetPorts"][0]["number"]
        assert all(c["ports"][0]["containerPort"] == port for d in selected for c in d["spec"]["template"]["spec"]["containers"])
        picker = by_name(objects, "Service")[pool["spec"]["endpointPickerRef"]["name"]]
        assert pool["spec"]["endpointPickerRef"]["port"]["number"] in [p["port"] for p in picker["spec"]["ports"]]

    epp = by_name(objects, "Deployment")["duet-epp"]
    container = epp["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:3] == ["epp", "--config", "/etc/duet/duet.yaml"]
    assert container["readinessProbe"]["grpc"] == {"port": 9002, "service": "readiness"}
    assert epp["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] in by_name(objects, "ConfigMap")
    rules = by_name(objects, "Role")["duet-epp"]["rules"]
    assert {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]} == {
        ("", "pods"), ("inference.networking.k8s.io", "inferencepools")}
    assert "duet-gateway" not in by_name(objects, "Deployment")  # no proxy hop: the platform's gateway carries the bytes


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_the_pickers_config_loads_and_reads_every_model_from_its_pool(built, name):
    config = load_config(built[f"{name}-path"][0]["path"])
    assert config.replicas == () and config.state.store == "redis"
    assert {p.model for p in config.pools} == set(config.models)
    assert all(p.variant_label == "duet.dev/variant" for p in config.pools)


def test_plain_gie_takes_the_profiles_device():
    assert "nvidia.com/gpu" in render(EXAMPLE["gpu"], "gie")["gie/vllm.yaml"]
    assert "nvidia.com/gpu" not in render(EXAMPLE["cpu"], "gie")["gie/vllm.yaml"]
    assert render(EXAMPLE["cpu"], "gie") == render(EXAMPLE["cpu"], "gie-cpu")


def pooled(**section: str):
    """The example's model read from an InferencePool (its variants' static replicas dropped)."""
    def change(raw: dict[str, Any]) -> None:
        model = raw["models"]["smollm2"]
        for variant in model["variants"].values():
            variant.pop("replicas", None)
        model["inference_pool"] = section
    return change


def edited(tmp_path: Path, change) -> Path:
    raw = yaml.safe_load(EXAMPLE["cpu"].read_text())
    change(raw)
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize("change, target, path", [
    (pooled(name="p", variant_label="example.com/flavour"), "gie", "models.smollm2.inference_pool.variant_label"),
    (lambda raw: raw["models"]["smollm2"]["variants"]["fast"].update(launch_profile="nope"),
     "gie", "models.smollm2.variants.fast.launch_profile"),
    (lambda raw: None, "gie-gpu", "models.smollm2.variants.standard.launch_profile"),  # a CPU profile on a GPU target
    (pooled(name="Bad_Name"), "gie", "models.smollm2.inference_pool.name"),
])
def test_bad_input_is_a_config_error_naming_its_path(tmp_path, capsys, change, target, path):
    config = edited(tmp_path, change)
    with pytest.raises(ConfigError) as caught:
        render(config, target)
    assert caught.value.path == path
    assert duet(["deploy", "render", "--config", str(config), "--target", target, "--out", str(tmp_path / "out")]) == 2
    assert path in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_named_pool_and_gateway_are_kept(tmp_path):
    config = edited(tmp_path, pooled(name="smol-pool", namespace="elsewhere"))
    files = render(config, "gie", gateway_name="platform-gw")
    write(files, tmp_path / "out")
    (pool,) = yaml.safe_load_all(files["gie/inferencepool.yaml"])
    assert pool["metadata"]["name"] == "smol-pool"
    assert yaml.safe_load(files["gie/httproute.yaml"])["spec"]["parentRefs"][0]["name"] == "platform-gw"
    (found,) = load_config(tmp_path / "out" / "gie" / "duet.yaml").pools
    assert (found.name, found.namespace) == ("smol-pool", None)  # the picker runs beside its pool
