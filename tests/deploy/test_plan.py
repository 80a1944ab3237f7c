from pathlib import Path

import pytest
import yaml

from gateway.deploy.plan import Target, load_plan
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "deploy" / "config" / "demo.yaml"
GPU = ROOT / "deploy" / "render" / "h100-70b.yaml"


def test_the_gpu_example_plans_two_replicas_per_variant():
    plan = load_plan(GPU, Target.parse("k8s-gpu"))
    assert [(d.name, d.profile.name, d.replicas) for d in plan.variants] == [
        ("vllm-llama-3-70b-standard", "h100-70b-bf16", 2), ("vllm-llama-3-70b-fast", "h100-70b-fp8", 2)]
    assert plan.variants[1].label_selector == "app.kubernetes.io/name=vllm,duet.dev/model=llama-3-70b,duet.dev/variant=fast"


def edited(tmp_path, edit):
    raw = yaml.safe_load(DEMO.read_text())
    edit(raw["models"]["smollm2"]["variants"]["fast"])
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize("edit, target, variant, message", [
    (lambda v: v.pop("launch_profile"), "k8s-cpu", "fast", "needed to deploy"),
    (lambda v: v.update(launch_profile="tpu-v5"), "compose-cpu", "fast", "unknown profile 'tpu-v5'"),
    (lambda v: None, "k8s-gpu", "standard", "'cpu-smollm2-bf16' is a cpu profile; target k8s-gpu needs one of: h100-70b-bf16"),
    (lambda v: v.update(launch_profile="cpu-smollm2-int8-compiled"), "k8s-cpu", "fast", "known to be wrong"),
])
def test_errors_name_the_variants_launch_profile(tmp_path, edit, target, variant, message):
    with pytest.raises(ConfigError) as info:
        load_plan(edited(tmp_path, edit), Target.parse(target))
    assert info.value.path == f"models.smollm2.variants.{variant}.launch_profile"
    assert message in info.value.message


def test_an_invalid_config_fails_as_the_gateway_would(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_plan(edited(tmp_path, lambda v: v.update(kind="turbo")), Target.parse("k8s-cpu"))
    assert info.value.path == "models.smollm2.variants.fast.kind"


def test_unknown_targets_are_refused():
    with pytest.raises(ValueError, match="known: k8s-gpu"):
        Target.parse("helm")


def test_a_variants_scheduling_must_match_its_launch_profiles(tmp_path):
    """A variant said to schedule by priority on replicas started FCFS would send a priority
    they ignore (or, on older vLLM, refuse); the other way round, one they would honour is lost."""
    with pytest.raises(ConfigError) as info:
        load_plan(edited(tmp_path, lambda v: v.update(scheduling="fcfs")), Target.parse("k8s-cpu"))
    assert info.value.path == "models.smollm2.variants.fast.scheduling"
    assert "'fcfs', but launch profile 'cpu-smollm2-int4' schedules priority" in info.value.message


def gpu_edited(tmp_path, counts):
    """The GPU example at fixed counts (without its autoscaling, which would own them)."""
    raw = yaml.safe_load(GPU.read_text())
    del raw["models"]["llama-3-70b"]["autoscaling"]
    for variant, count in counts.items():
        raw["models"]["llama-3-70b"]["variants"][variant]["replica_count"] = count
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_replica_count_sets_each_variants_replicas_in_what_render_writes(tmp_path):
    """``duet plan`` writes ``replica_count``; the Deployments and compose services follow it."""
    from gateway.deploy.render import render

    path = gpu_edited(tmp_path, {"standard": 1, "fast": 5})
    assert [d.replicas for d in load_plan(path, Target.parse("k8s-gpu")).variants] == [1, 5]
    vllm = list(yaml.safe_load_all(render(path, "k8s-gpu")["overlays/gpu/vllm.yaml"]))
    assert {o["metadata"]["name"]: o["spec"]["replicas"] for o in vllm if o["kind"] == "Deployment"} == {
        "vllm-llama-3-70b-standard": 1, "vllm-llama-3-70b-fast": 5}
    services = yaml.safe_load(render(path, "compose-gpu")["compose.yaml"])["services"]
    assert len([name for name in services if name.startswith("vllm-llama-3-70b-fast-")]) == 5


@pytest.mark.parametrize("counts, path, message", [
    ({"fast": -1}, "models.llama-3-70b.variants.fast.replica_count", "greater than or equal to 0"),
    ({"standard": 0, "fast": 0}, "models.llama-3-70b.variants", "every variant has replica_count 0"),
])
def test_replica_count_errors_name_the_path(tmp_path, counts, path, message):
    with pytest.raises(ConfigError) as info:
        load_plan(gpu_edited(tmp_path, counts), Target.parse("k8s-gpu"))
    assert info.value.path == path and message in info.value.message
