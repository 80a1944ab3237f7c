"""Every target renders from its example config and validates: kustomize builds the overlays,
every object passes the Kubernetes schemas (KEDA's ScaledObjects the schema in deploy/schemas),
the rules pass promtool, compose files the compose spec, and the configs the deployed gateways
get load. The committed deploy/ files are exactly
what the renderer makes of the example configs (regenerate: make deploy-render)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gateway.cli import main as duet
from gateway.config import load_config
from gateway.deploy.render import CPU_EXAMPLE, GPU_EXAMPLE, render, repo_files, write
from tests.deploy.tools import require

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = {"gpu": ROOT / GPU_EXAMPLE, "cpu": ROOT / CPU_EXAMPLE}
K8S_VERSION = "1.32.0"  # Debian's kubectl
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "ScaledObject"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, Path]:
    """Each target written by the CLI, as a user would."""
    out = {}
    for device, config in EXAMPLE.items():
        for platform in ("k8s", "compose"):
            target = f"{platform}-{device}"
            out[target] = tmp_path_factory.mktemp(target)
            assert duet(["deploy", "render", "--config", str(config), "--target", target, "--out", str(out[target])]) == 0
    out["k8s-gpu-keda"] = tmp_path_factory.mktemp("k8s-gpu-keda")
    assert duet(["deploy", "render", "--config", str(EXAMPLE["gpu"]), "--target", "k8s-gpu", "--autoscaler", "keda",
                 "--out", str(out["k8s-gpu-keda"])]) == 0
    return out


def test_committed_deploy_files_are_the_render_of_the_example_configs():
    stale = [path for path, text in repo_files(ROOT).items()
             if not (ROOT / path).is_file() or (ROOT / path).read_text() != text]
    assert not stale, f"run `make deploy-render`: {stale}"


def test_both_devices_share_one_base():
    gpu, cpu = render(EXAMPLE["gpu"], "k8s-gpu"), render(EXAMPLE["cpu"], "k8s-cpu")
    assert {p: t for p, t in gpu.items() if p.startswith("base/")} == {p: t for p, t in cpu.items() if p.startswith("base/")}


def kustomize(overlay: Path) -> list[dict]:
    built = subprocess.run([require("kubectl"), "kustomize", str(overlay)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


@pytest.mark.parametrize("target, device", [("k8s-gpu", "gpu"), ("k8s-cpu", "cpu"), ("k8s-gpu-keda", "gpu")])
def test_overlays_build_and_every_object_passes_the_kubernetes_schemas(rendered, target, device):
    objects = kustomize(rendered[target] / "overlays" / device)
    for obj in objects:
        if obj["kind"] in CRD_KINDS:
            continue  # no schema ships for these CRDs: Prometheus Operator's go through promtool, KEDA's below
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    kinds = sorted({o["kind"] for o in objects})
    assert kinds == sorted({"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Namespace", "PodDisruptionBudget",
                            "PrometheusRule", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount",
                            "ServiceMonitor", "StatefulSet", *(["PersistentVolumeClaim"] if device == "gpu" else []),
                            *(["ScaledObject"] if target.endswith("keda") else [])})


def by_name(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def test_gpu_overlay_shape(rendered):
    objects = kustomize(rendered["k8s-gpu"] / "overlays" / "gpu")
    deployments = by_name(objects, "Deployment")
    gateway = deployments["duet-gateway"]
    assert gateway["spec"]["replicas"] >= 2 and gateway["metadata"]["namespace"] == "duet"
    container = gateway["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    config_map = gateway["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
    assert config_map in by_name(objects, "ConfigMap")  # kustomize rewrote the hashed name
    assert by_name(objects, "HorizontalPodAutoscaler")["duet-gateway"]["spec"]["minReplicas"] >= 2
    assert "duet-gateway" in by_name(objects, "PodDisruptionBudget")
    vllm = deployments["vllm-llama-3-70b-fast"]
    labels = vllm["spec"]["template"]["metadata"]["labels"]
    assert labels["duet.dev/model"] == "llama-3-70b" and labels["duet.dev/variant"] == "fast"
    pod = vllm["spec"]["template"]["spec"]["containers"][0]
    assert pod["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert pod["readinessProbe"]["httpGet"]["path"] == "/health"
    assert "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic" in pod["args"]
    assert "replicas" not in vllm["spec"]  # autoscaled: its HPA owns the count (tests/deploy/test_autoscaling.py)
    # The Service carries the labels discovery selects on (EndpointSlices inherit them).
    assert by_name(objects, "Service")["vllm-llama-3-70b-fast"]["metadata"]["labels"]["duet.dev/variant"] == "fast"
    assert "duet-redis" in by_name(objects, "StatefulSet")


def test_an_external_redis_replaces_the_deployed_one(tmp_path):
    files = render(EXAMPLE["cpu"], "k8s-cpu", redis_url="redis://redis.example:6379/2")
    write(files, tmp_path)
    objects = kustomize(tmp_path / "overlays" / "cpu")
    assert "duet-redis" not in by_name(objects, "StatefulSet")
    assert by_name(objects, "Secret")["duet-secrets"]["stringData"]["redis-url"] == "redis://redis.example:6379/2"


@pytest.mark.parametrize("target, path, replicas", [
    ("k8s-gpu", "overlays/gpu/duet.yaml", 0), ("k8s-cpu", "overlays/cpu/duet.yaml", 0),
    ("compose-gpu", "duet.yaml", 4), ("compose-cpu", "duet.yaml", 2),
])
def test_deployed_gateway_configs_load(rendered, target, path, replicas):
    config = load_config(rendered[target] / path)
    assert config.state.store == "redis"
    assert len(config.replicas) == replicas
    if target.startswith("k8s"):
        assert {(t.model, t.variant) for t in config.discovery} == {
            (m, v) for m, spec in config.models.items() for v in spec.variants}


def rules_of(rendered: dict[str, Path]) -> list[Path]:
    """The rule files as Prometheus loads them: compose's rules.yml and the PrometheusRule's spec."""
    paths = [rendered[t] / "prometheus" / "rules.yml" for t in ("compose-gpu", "compose-cpu")]
    for obj in yaml.safe_load_all((rendered["k8s-gpu"] / "base" / "monitoring.yaml").read_text()):
        if obj["kind"] == "PrometheusRule":
            spec = rendered["k8s-gpu"] / "prometheus-rule-spec.yml"
            spec.write_text(yaml.safe_dump(obj["spec"]))
            paths.append(spec)
    return paths


def test_rules_pass_promtool(rendered):
    promtool = require("promtool")
    paths = rules_of(rendered)
    assert len(paths) == 3
    result = subprocess.run([promtool, "check", "rules", *map(str, paths)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_test_of_the_burn_rate_alert():
    promtool = require("promtool")
    tests = ROOT / "deploy" / "prometheus" / "tests.yml"
    result = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True, cwd=tests.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def compose_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((ROOT / "deploy" / "schemas" / "compose-spec.json").read_text())
    return jsonschema.Draft201909Validator(schema, format_checker=jsonschema.Draft201909Validator.FORMAT_CHECKER)


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_compose_files_follow_the_compose_spec(rendered, device):
    compose = yaml.safe_load((rendered[f"compose-{device}"] / "compose.yaml").read_text())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in compose_validator().iter_errors(compose)]
    assert not errors
    services = compose["services"]
    assert {"gateway", "redis", "prometheus", "grafana"} <= set(services)
    replicas = [name for name in services if name.startswith("vllm-")]
    assert len(replicas) == (4 if device == "gpu" else 2)
    # The gateway's config names every replica service, and Prometheus scrapes each one.
    config = load_config(rendered[f"compose-{device}"] / "duet.yaml")
    assert sorted(r.url for r in config.replicas) == sorted(f"http://{name}:8000" for name in replicas)
    scrape = yaml.safe_load((rendered[f"compose-{device}"] / "prometheus" / "prometheus.yml").read_text())
    targets = [t for job in scrape["scrape_configs"] for group in job["static_configs"] for t in group["targets"]]
    assert sorted(targets) == sorted(["gateway:8000", *(f"{name}:8000" for name in replicas)])


def test_the_compose_schema_check_can_fail():
    errors = list(compose_validator().iter_errors({"services": {"x": {"image": 3, "bogus": True}}}))
    assert errors


def test_gpu_replicas_get_disjoint_gpus(rendered):
    compose = yaml.safe_load((rendered["compose-gpu"] / "compose.yaml").read_text())
    ids = [d for name, s in compose["services"].items() if name.startswith("vllm-")
           for d in s["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"]]
    assert sorted(ids, key=int) == [str(i) for i in range(16)]
