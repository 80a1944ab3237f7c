"""Engine roles rendered into vLLM's arguments: each replica's chunk budget, max batch and, for
disaggregated prefill, ``--kv-transfer-config`` with its connector and kv_role, in compose (one
service per replica) and Kubernetes (one Deployment per engine group: test_engine_groups.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import parse_config
from gateway.deploy.render import GPU_EXAMPLE, render
from gateway.domain import EngineRole
from gateway.errors import ConfigError
from serving.launch import load_profiles
from serving.launch.roles import EngineSettings, with_engine, with_engine_args

ROOT = Path(__file__).resolve().parents[2]
NIXL = "NixlConnector"


def config_with(tmp_path: Path, edit: Any) -> Path:
    raw = yaml.safe_load((ROOT / GPU_EXAMPLE).read_text())
    raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
    for profile in raw["routing"]["profiles"].values():
        profile["filters"].append("engine-role")
    edit(raw["models"]["llama-3-70b"]["variants"]["standard"])
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def flag_value(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def p_d(standard: dict[str, Any]) -> None:
    standard["replicas"][0]["engine"] = {"role": "prefill", "kv_connector": NIXL, "max_num_batched_tokens": 16384}
    standard["replicas"][1]["engine"] = {"role": "decode", "kv_connector": NIXL, "max_num_batched_tokens": 512,
                                         "max_num_seqs": 256}


def test_compose_renders_each_replicas_role_into_its_vllm_arguments(tmp_path: Path) -> None:
    files = render(config_with(tmp_path, p_d), "compose-gpu")
    services = yaml.safe_load(files["compose.yaml"])["services"]
    prefill = services["vllm-llama-3-70b-standard-0"]["command"]
    decode = services["vllm-llama-3-70b-standard-1"]["command"]
    assert json.loads(flag_value(prefill, "--kv-transfer-config") or "") == {"kv_connector": NIXL, "kv_role": "kv_producer"}
    assert json.loads(flag_value(decode, "--kv-transfer-config") or "") == {"kv_connector": NIXL, "kv_role": "kv_consumer"}
    assert flag_value(prefill, "--max-num-batched-tokens") == "16384"
    assert flag_value(decode, "--max-num-batched-tokens") == "512"
    assert flag_value(decode, "--max-num-seqs") == "256" and decode.count("--max-num-seqs") == 1  # replaces the profile's 1024
    assert flag_value(prefill, "--max-num-seqs") == "1024"  # the profile's, untouched
    fast = services["vllm-llama-3-70b-fast-0"]["command"]
    assert "--kv-transfer-config" not in fast and "--max-num-batched-tokens" not in fast  # role both, vLLM's default


def test_the_deployed_gateway_knows_each_replicas_role(tmp_path: Path) -> None:
    """vLLM reports no role: the gateway's own config must say which service is which."""
    deployed = parse_config(render(config_with(tmp_path, p_d), "compose-gpu")["duet.yaml"])
    roles = {r.url: r.engine.role for r in deployed.replicas}
    assert roles == {"http://vllm-llama-3-70b-standard-0:8000": EngineRole.PREFILL,
                     "http://vllm-llama-3-70b-standard-1:8000": EngineRole.DECODE,
                     "http://vllm-llama-3-70b-fast-0:8000": EngineRole.BOTH,
                     "http://vllm-llama-3-70b-fast-1:8000": EngineRole.BOTH}


def test_kubernetes_renders_the_variants_engine(tmp_path: Path) -> None:
    def chunked(standard: dict[str, Any]) -> None:
        standard["engine"] = {"max_num_batched_tokens": 2048, "kv_connector": NIXL}

    files = render(config_with(tmp_path, chunked), "k8s-gpu")
    deployments = [doc for doc in yaml.safe_load_all(files["overlays/gpu/vllm.yaml"]) if doc and doc["kind"] == "Deployment"]
    args = {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["args"] for d in deployments}
    standard = args["vllm-llama-3-70b-standard"]
    assert flag_value(standard, "--max-num-batched-tokens") == "2048"
    assert json.loads(flag_value(standard, "--kv-transfer-config") or "") == {"kv_connector": NIXL, "kv_role": "kv_both"}


def test_replicas_of_one_autoscaled_variant_with_different_engines_get_an_autoscaler_per_group(tmp_path: Path) -> None:
    """One prefill and one decode replica: two group Deployments, each on its group's series,
    each between the split of the variant's floor (one: the decoder) and of max_replicas (six:
    three and three); a plain HPA keeps the prefill group at one (test_autoscaling.py has more)."""
    files = render(config_with(tmp_path, p_d), "k8s-gpu")
    hpas = {doc["spec"]["scaleTargetRef"]["name"]: doc for doc in yaml.safe_load_all(files["overlays/gpu/autoscaling.yaml"])
            if doc and doc["kind"] == "HorizontalPodAutoscaler"}
    groups = {"vllm-llama-3-70b-standard-prefill-nixl-c16384": "prefill-nixl-c16384",
              "vllm-llama-3-70b-standard-decode-nixl-c512-s256": "decode-nixl-c512-s256"}
    assert set(hpas) == {*groups, "vllm-llama-3-70b-fast"}
    for name, group in groups.items():
        (metric,) = hpas[name]["spec"]["metrics"]
        assert metric["external"]["metric"]["name"] == "duet_desired_group_replicas"
        assert metric["external"]["metric"]["selector"]["matchLabels"]["group"] == group
        assert (hpas[name]["spec"]["minReplicas"], hpas[name]["spec"]["maxReplicas"]) == (1, 3)


def test_under_keda_a_variant_of_prefill_and_decode_only_needs_a_floor_of_two(tmp_path: Path) -> None:
    """KEDA would take it to one replica, its decoder alone, which answers nothing."""
    with pytest.raises(ConfigError) as info:
        render(config_with(tmp_path, p_d), "k8s-gpu", autoscaler="keda")
    assert info.value.path == "models.llama-3-70b.autoscaling.min_replicas"
    assert "no 'both' one" in str(info.value)
    path = config_with(tmp_path, p_d)
    raw = yaml.safe_load(path.read_text())
    raw["models"]["llama-3-70b"]["autoscaling"]["min_replicas"] = {"standard": 2}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    scaled = {doc["spec"]["scaleTargetRef"]["name"]: doc["spec"]["minReplicaCount"] for doc in yaml.safe_load_all(
        render(path, "k8s-gpu", autoscaler="keda")["overlays/gpu/autoscaling.yaml"]) if doc}
    assert [scaled[f"vllm-llama-3-70b-standard-{group}"] for group in ("prefill-nixl-c16384", "decode-nixl-c512-s256")] == [
        1, 1]


def test_a_replica_engine_replaces_the_profiles_flags_in_place_and_adds_the_rest() -> None:
    args = (("dtype", "bfloat16"), ("max-num-seqs", 1024))
    settings = EngineSettings("decode", 256, 128, NIXL)
    assert with_engine_args(args, settings) == (
        ("dtype", "bfloat16"), ("max-num-seqs", 128), ("max-num-batched-tokens", 256),
        ("kv-transfer-config", {"kv_connector": NIXL, "kv_role": "kv_consumer"}))
    assert with_engine_args(args, EngineSettings()) == args


def test_engine_settings_refuse_an_unknown_role_or_a_p_d_role_without_a_connector() -> None:
    with pytest.raises(ValueError, match="role 'encode'"):
        EngineSettings("encode")
    with pytest.raises(ValueError, match="prefill role needs a kv_connector"):
        EngineSettings("prefill")


def test_with_engine_keeps_the_rest_of_the_profile() -> None:
    profile = load_profiles()["h100-70b-bf16"]
    launched = with_engine(profile, EngineSettings("prefill", 8192, None, NIXL))
    assert launched.name == profile.name and launched.resources == profile.resources
    assert launched.args[: len(profile.args)] == profile.args


def _speculative_decode_beside_standard_prefill(tmp_path: Path, launch_profile: str) -> Path:
    raw = yaml.safe_load(config_with(tmp_path, p_d).read_text())
    fast = raw["models"]["llama-3-70b"]["variants"]["fast"]
    fast.update(kind="speculative", launch_profile=launch_profile, shares_weights_with="standard")
    fast["replicas"][0]["engine"] = {"role": "decode", "kv_connector": NIXL}
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_an_n_gram_variant_may_decode_the_standard_prefills_kv(tmp_path: Path) -> None:
    """N-gram proposes from the tokens alone: the standard prefill's KV is all it needs."""
    files = render(_speculative_decode_beside_standard_prefill(tmp_path, "h100-70b-ngram"), "compose-gpu")
    decode = yaml.safe_load(files["compose.yaml"])["services"]["vllm-llama-3-70b-fast-0"]["command"]
    assert json.loads(flag_value(decode, "--kv-transfer-config") or "") == {"kv_connector": NIXL, "kv_role": "kv_consumer"}
    assert json.loads(flag_value(decode, "--speculative-config") or "")["method"] == "ngram"


def test_a_variant_drafting_with_a_model_is_refused_standard_prefilled_kv(tmp_path: Path) -> None:
    """EAGLE-3's draft head has KV of its own, which NIXL transfers too: vLLM refuses a prefill
    side without the same draft at the handshake, so the render names the field instead."""
    path = _speculative_decode_beside_standard_prefill(tmp_path, "h100-70b-eagle3")
    with pytest.raises(ConfigError) as refused:
        render(path, "compose-gpu")
    assert refused.value.path == "models.llama-3-70b.variants.fast.shares_weights_with"
    assert "eagle3" in str(refused.value) and "n-gram" in str(refused.value)
