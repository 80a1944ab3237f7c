"""What scales each autoscaled variant: an HPA on duet_desired_replicas (through prometheus-adapter)
or a KEDA ScaledObject, one per variant Deployment as the config chooses, each validated (HPAs by
the Kubernetes schemas, ScaledObjects by deploy/schemas/keda-scaledobject.json), targeting its
variant's Deployment, never below the parity floor, and nothing of it without autoscaling. A
variant of several engine groups: one per group Deployment on its group's series
(duet_desired_group_replicas), bounded by the split of the variant's floor and most."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gateway.deploy.plan import Target, load_plan
from gateway.deploy.render import ADAPTER_VALUES, CPU_EXAMPLE, GPU_EXAMPLE, render
from gateway.domain import EngineRole
from gateway.errors import ConfigError
from gateway.scaling import GroupShare, split_replicas

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


# A variant of three engine groups (standard at the committed W4A16 plan's mix: 2 prefill-only,
# 1 large-budget and 3 small-budget decoders, through NIXL).
GROUPS = [
    {"count": 2, "engine": {"role": "prefill", "kv_connector": "NixlConnector", "max_num_batched_tokens": 16384}},
    {"count": 1, "engine": {"kv_connector": "NixlConnector", "max_num_batched_tokens": 16384}},
    {"count": 3, "engine": {"kv_connector": "NixlConnector", "max_num_batched_tokens": 2048}},
]
GROUP_NAMES = ("prefill-nixl-c16384", "both-nixl-c16384", "both-nixl-c2048")
SHARES = (GroupShare(2, EngineRole.PREFILL), GroupShare(1, EngineRole.BOTH), GroupShare(3, EngineRole.BOTH))


def with_groups(tmp_path: Path, max_replicas: int = 6) -> Path:
    def edit(model):
        standard = model["variants"]["standard"]
        del standard["replicas"]
        standard["engine_groups"] = GROUPS
        model["autoscaling"]["max_replicas"] = max_replicas

    path = edited(tmp_path, edit)
    raw = yaml.safe_load(path.read_text())
    raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})  # P/D replicas need it
    for profile in raw["routing"]["profiles"].values():
        profile["filters"].append("engine-role")
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize("autoscaler", ["hpa", "keda"])
def test_each_engine_group_deployment_gets_its_own_autoscaler_on_its_groups_series(tmp_path, autoscaler):
    files = overlay(with_groups(tmp_path), autoscaler)
    deployments = {o["metadata"]["name"]: o for o in objects(files, "vllm.yaml") if o["kind"] == "Deployment"}
    by_target = scalers(files)
    groups = {f"vllm-llama-3-70b-standard-{g}": g for g in GROUP_NAMES}
    assert set(by_target) == set(deployments) == {*groups, "vllm-llama-3-70b-fast"}
    for name, group in groups.items():
        scaler = by_target[name]
        assert scaler["metadata"]["labels"]["duet.dev/engine-group"] == group
        series = {"model": MODEL, "variant": "standard", "group": group}
        if autoscaler == "hpa":
            (metric,) = scaler["spec"]["metrics"]
            assert metric["external"]["metric"] == {"name": "duet_desired_group_replicas",
                                                    "selector": {"matchLabels": series}}
            kubernetes_validate.validate(scaler, K8S_VERSION, strict=True)
        else:
            (trigger,) = scaler["spec"]["triggers"]
            assert trigger["metadata"]["query"] == (
                f'max(duet_desired_group_replicas{{namespace="duet",model="{MODEL}",variant="standard",group="{group}"}})')
            assert not keda_errors(scaler)
        assert "replicas" not in deployments[name]["spec"]
    # the variant of one engine keeps its series
    fast = by_target["vllm-llama-3-70b-fast"]
    assert "duet_desired_replicas" in json.dumps(fast) and "duet_desired_group_replicas" not in json.dumps(fast)


def bounds(files: dict[str, str], autoscaler: str) -> list[tuple[int, int]]:
    low, high = ("minReplicas", "maxReplicas") if autoscaler == "hpa" else ("minReplicaCount", "maxReplicaCount")
    found = scalers(files)
    return [(found[f"vllm-llama-3-70b-standard-{g}"]["spec"][low], found[f"vllm-llama-3-70b-standard-{g}"]["spec"][high])
            for g in GROUP_NAMES]


def test_each_groups_bounds_are_the_split_of_the_variants_floor_and_most(tmp_path):
    """Standard's floor is one (parity: the only home of long-context): the split gives it to the
    largest group that answers alone, the 2,048 one; at its most (max_replicas 12) the groups
    get twice their counts. KEDA follows the split to zero; a plain HPA keeps each group at one."""
    files = {a: overlay(with_groups(tmp_path, max_replicas=12), a) for a in ("hpa", "keda")}
    assert split_replicas(SHARES, 1) == (0, 0, 1) and split_replicas(SHARES, 12) == (4, 2, 6)
    assert bounds(files["keda"], "keda") == [(0, 4), (0, 2), (1, 6)]
    assert bounds(files["hpa"], "hpa") == [(1, 4), (1, 2), (1, 6)]


def test_the_adapter_serves_the_groups_series_beside_the_variants(tmp_path):
    values = yaml.safe_load(overlay(with_groups(tmp_path), "hpa")[ADAPTER_VALUES])
    variants, groups = values["rules"]["external"]
    assert variants["name"]["as"] == "duet_desired_replicas"
    assert groups["seriesQuery"] == 'duet_desired_group_replicas{namespace!="",model!="",variant!="",group!=""}'
    assert groups["name"] == {"matches": "^duet_desired_group_replicas$", "as": "duet_desired_group_replicas"}
    assert groups["metricsQuery"] == "max by (model, variant, group) (<<.Series>>{<<.LabelMatchers>>})"
    assert groups["resources"] == variants["resources"]


def test_a_group_the_split_never_reaches_is_refused_naming_the_fewest_replicas_that_reach_it(tmp_path):
    """At max_replicas 2 the split gives the large-budget decoders none: a Deployment that would
    never run (and that a plain HPA would hold at one whatever the gauge said)."""
    assert split_replicas(SHARES, 2) == (1, 0, 1) and split_replicas(SHARES, 3) == (1, 1, 1)
    with pytest.raises(ConfigError) as info:
        load_plan(with_groups(tmp_path, max_replicas=2), Target.parse("k8s-gpu"))
    assert info.value.path == "models.llama-3-70b.autoscaling.max_replicas"
    assert "give none to both-nixl-c16384" in info.value.message and "at least 3" in info.value.message
    assert load_plan(with_groups(tmp_path, max_replicas=3), Target.parse("k8s-gpu")).variants
