"""What scales each autoscaled variant: an HPA on duet_desired_replicas (through prometheus-adapter)
or a KEDA ScaledObject, one per variant Deployment as the config chooses, each validated (HPAs by
the Kubernetes schemas, ScaledObjects by deploy/schemas/keda-scaledobject.json), targeting its
variant's Deployment, never below the parity floor, and nothing of it without autoscaling."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gateway.deploy.plan import Target, load_plan
from gateway.deploy.render import ADAPTER_VALUES, CPU_EXAMPLE, GPU_EXAMPLE, render
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / GPU_EXAMPLE
K8S_VERSION = "1.32.0"
MODEL = "llama-3-70b"
AUTOSCALER_KINDS = {"HorizontalPodAutoscaler", "ScaledObject"}


def edited(tmp_path: Path, edit) -> Path:
    raw = yaml.safe_load(GPU.read_text())
    edit(raw["models"][MODEL])
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def overlay(config: Path, autoscaler: str | None = None) -> dict[str, str]:
    return {p.removeprefix("overlays/gpu/"): text for p, text in render(config, "k8s-gpu", autoscaler=autoscaler).items()
            if p.startswith("overlays/gpu/")}


def objects(files: dict[str, str], name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(files.get(name, "")) if doc]


def scalers(files: dict[str, str]) -> dict[str, dict]:
    """Autoscaler objects by the Deployment they scale."""
    found = [o for o in objects(files, "autoscaling.yaml") if o["kind"] in AUTOSCALER_KINDS]
    by_target = {o["spec"]["scaleTargetRef"]["name"]: o for o in found}
    assert len(by_target) == len(found), "a Deployment with two autoscalers"
    return by_target


def keda_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((ROOT / "deploy" / "schemas" / "keda-scaledobject.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def keda_errors(obj: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in keda_validator().iter_errors(obj)]


@pytest.mark.parametrize("autoscaler, kind", [("hpa", "HorizontalPodAutoscaler"), ("keda", "ScaledObject")])
def test_each_variant_deployment_gets_one_autoscaler_of_the_configs_kind_aimed_at_it(autoscaler, kind):
    files = overlay(GPU, autoscaler)
    deployments = {o["metadata"]["name"]: o for o in objects(files, "vllm.yaml") if o["kind"] == "Deployment"}
    by_target = scalers(files)
    assert set(by_target) == set(deployments) == {"vllm-llama-3-70b-standard", "vllm-llama-3-70b-fast"}
    for name, scaler in by_target.items():
        assert scaler["kind"] == kind
        assert scaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        labels = deployments[name]["metadata"]["labels"]
        model, variant = labels["duet.dev/model"], labels["duet.dev/variant"]
        if kind == "HorizontalPodAutoscaler":
            (metric,) = scaler["spec"]["metrics"]
            assert metric["type"] == "External"
            assert metric["external"]["metric"] == {"name": "duet_desired_replicas",
                                                    "selector": {"matchLabels": {"model": model, "variant": variant}}}
            assert metric["external"]["target"] == {"type": "AverageValue", "averageValue": "1"}
        else:
            (trigger,) = scaler["spec"]["triggers"]
            assert (trigger["type"], trigger["metricType"], trigger["metadata"]["threshold"]) == (
                "prometheus", "AverageValue", "1")
            assert trigger["metadata"]["query"] == (
                f'max(duet_desired_replicas{{namespace="duet",model="{model}",variant="{variant}"}})')
        # The autoscaler owns the count: a replicas field would be reset by every kubectl apply.
        assert "replicas" not in deployments[name]["spec"]


def test_hpas_pass_the_kubernetes_schemas_and_scaled_objects_the_keda_schema():
    hpas = scalers(overlay(GPU, "hpa")).values()
    for obj in hpas:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    for obj in scalers(overlay(GPU, "keda")).values():
        assert not keda_errors(obj)


def test_the_committed_keda_overlay_passes_the_keda_schema():
    committed = yaml.safe_load_all((ROOT / "deploy/k8s/overlays/gpu-keda/autoscaling.yaml").read_text())
    assert [keda_errors(o) for o in committed] == [[], []]


@pytest.mark.parametrize("breakage, where", [
    (lambda so: so["spec"]["triggers"][0]["metadata"].pop("threshold"), "threshold"),
    (lambda so: so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"].update(
        stabilizationWindowSeconds=4000), "4000"),
    (lambda so: so["spec"].update(minReplicas=1), "minReplicas"),
    (lambda so: so["spec"]["triggers"][0].update(metricType="Average"), "Average"),
    (lambda so: so["spec"].pop("scaleTargetRef"), "scaleTargetRef"),
])
def test_the_keda_schema_check_can_fail(breakage, where):
    so = scalers(overlay(GPU, "keda"))["vllm-llama-3-70b-fast"]
    breakage(so)
    errors = keda_errors(so)
    assert errors and any(where in e for e in errors), errors


def test_the_parity_floor_is_the_minimum_and_keda_lets_a_variant_without_one_reach_zero():
    """Standard is the only home of long-context and reasoning (the fast variant's parity refuses
    them): at least one replica under either autoscaler. Fast has no floor: KEDA may scale it to
    zero, a plain HPA only to one (minReplicas 0 needs the HPAScaleToZero feature gate)."""
    hpa, keda = scalers(overlay(GPU, "hpa")), scalers(overlay(GPU, "keda"))
    assert hpa["vllm-llama-3-70b-standard"]["spec"]["minReplicas"] == 1
    assert keda["vllm-llama-3-70b-standard"]["spec"]["minReplicaCount"] == 1
    assert hpa["vllm-llama-3-70b-fast"]["spec"]["minReplicas"] == 1
    assert keda["vllm-llama-3-70b-fast"]["spec"]["minReplicaCount"] == 0
    for scaler in (*hpa.values(), *keda.values()):
        assert scaler["spec"].get("maxReplicas", scaler["spec"].get("maxReplicaCount")) == 6


def test_no_parity_floor_when_every_task_has_two_homes_but_min_replicas_holds(tmp_path):
    def edit(model):
        del model["variants"]["fast"]["allowed_tasks"]
        model["autoscaling"]["min_replicas"] = {"fast": 2}

    keda = scalers(overlay(edited(tmp_path, edit), "keda"))
    assert keda["vllm-llama-3-70b-standard"]["spec"]["minReplicaCount"] == 0
    assert keda["vllm-llama-3-70b-fast"]["spec"]["minReplicaCount"] == 2
    hpa = scalers(overlay(edited(tmp_path, edit), "hpa"))
    assert [hpa[n]["spec"]["minReplicas"] for n in ("vllm-llama-3-70b-standard", "vllm-llama-3-70b-fast")] == [1, 2]


def test_the_stabilisation_window_and_polling_interval_are_the_configs():
    hpa = scalers(overlay(GPU, "hpa"))["vllm-llama-3-70b-fast"]
    assert hpa["spec"]["behavior"] == {"scaleUp": {"stabilizationWindowSeconds": 600},
                                       "scaleDown": {"stabilizationWindowSeconds": 600}}
    keda = scalers(overlay(GPU, "keda"))["vllm-llama-3-70b-fast"]["spec"]
    assert keda["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] == hpa["spec"]["behavior"]
    assert (keda["pollingInterval"], keda["cooldownPeriod"]) == (15, 600)


def test_a_scale_up_window_is_rendered_for_both_autoscalers(tmp_path):
    config = edited(tmp_path, lambda model: model["autoscaling"].update(scale_up_stabilization_s=90))
    for autoscaler in ("hpa", "keda"):
        (scaler,) = [s for n, s in scalers(overlay(config, autoscaler)).items() if n.endswith("-fast")]
        spec = scaler["spec"]
        behavior = spec["behavior"] if autoscaler == "hpa" else spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleUp"] == {"stabilizationWindowSeconds": 90}


def test_a_scale_up_policy_is_rendered_as_one_pods_policy_for_both_autoscalers(tmp_path):
    config = edited(tmp_path, lambda model: model["autoscaling"].update(scale_up_pods=2, scale_up_period_s=120))
    for autoscaler in ("hpa", "keda"):
        (scaler,) = [s for n, s in scalers(overlay(config, autoscaler)).items() if n.endswith("-fast")]
        spec = scaler["spec"]
        behavior = spec["behavior"] if autoscaler == "hpa" else spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleUp"]["policies"] == [{"type": "Pods", "value": 2, "periodSeconds": 120}]
        assert autoscaler == "hpa" or not keda_errors(scaler)


def test_a_schedule_floor_travels_in_the_gauge_and_adds_no_object(tmp_path):
    # The gauge reports max(schedule, reactive): the autoscaler objects are those of no schedule.
    config = edited(tmp_path, lambda model: model["autoscaling"].update(
        schedule_by_variant={"fast": [{"at": "07:00", "replicas": 3}, {"at": "22:00", "replicas": 1}]}))
    for autoscaler in ("hpa", "keda"):
        assert scalers(overlay(config, autoscaler)) == scalers(overlay(GPU, autoscaler))


def test_prometheus_adapter_values_come_with_hpas_only():
    values = yaml.safe_load(overlay(GPU, "hpa")[ADAPTER_VALUES])
    (rule,) = values["rules"]["external"]
    assert rule["seriesQuery"].startswith("duet_desired_replicas{")
    assert rule["name"]["as"] == "duet_desired_replicas"
    assert rule["metricsQuery"] == "max by (model, variant) (<<.Series>>{<<.LabelMatchers>>})"
    assert rule["resources"] == {"overrides": {"namespace": {"resource": "namespace"}}}
    assert ADAPTER_VALUES not in overlay(GPU, "keda")
    # Not a kustomize resource: helm installs it.
    assert ADAPTER_VALUES not in yaml.safe_load(overlay(GPU, "hpa")["kustomization.yaml"])["resources"]


def test_the_autoscaler_flag_reaches_the_deployed_config():
    config = overlay(GPU, "keda")["duet.yaml"]
    assert config.startswith("# Rendered by `duet deploy render --target k8s-gpu --autoscaler keda` from ")
    assert yaml.safe_load(config)["models"][MODEL]["autoscaling"]["autoscaler"] == "keda"


def test_without_autoscaling_nothing_new_is_rendered(tmp_path):
    fixed = overlay(edited(tmp_path, lambda model: model.pop("autoscaling")))
    assert "autoscaling.yaml" not in fixed and ADAPTER_VALUES not in fixed
    assert "autoscaling.yaml" not in yaml.safe_load(fixed["kustomization.yaml"])["resources"]
    assert [o["spec"]["replicas"] for o in objects(fixed, "vllm.yaml") if o["kind"] == "Deployment"] == [2, 2]
    # The flag switches what autoscaled models use; it does not make a model autoscale.
    assert overlay(edited(tmp_path, lambda model: model.pop("autoscaling")), "keda") == fixed | {
        "duet.yaml": fixed["duet.yaml"].replace("--target k8s-gpu`", "--target k8s-gpu --autoscaler keda`")}
    cpu = render(ROOT / CPU_EXAMPLE, "k8s-cpu")
    assert not any(p.endswith(("autoscaling.yaml", ADAPTER_VALUES)) for p in cpu)


def test_one_deployment_uses_one_autoscaler_for_every_model(tmp_path):
    """prometheus-adapter and KEDA both serve the external metrics API: a cluster runs one."""
    raw = yaml.safe_load(GPU.read_text())
    other = yaml.safe_load(yaml.safe_dump(raw["models"][MODEL]))
    for variant in other["variants"].values():
        variant["served_model_name"] += "-b"
        variant.pop("replicas")
    other["autoscaling"]["autoscaler"] = "keda"
    raw["models"]["llama-b"] = other
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        load_plan(path, Target.parse("k8s-gpu"))
    assert info.value.path == "models.llama-b.autoscaling.autoscaler"
    assert "'keda', but models.llama-3-70b uses 'hpa'" in info.value.message
    # Chosen for all at render time, they agree.
    assert {d.autoscaling.autoscaler for d in load_plan(path, Target.parse("k8s-gpu"), "keda").variants} == {"keda"}
