"""The deploy renderer's launch profiles are serving/launch's files: same checkpoints as the
simulator twins, same engine arguments as a local replica, names and context from the config."""

from pathlib import Path

import pytest
import yaml

from gateway.deploy.profiles import PROFILES, vllm_args
from serving.launch.local import local_replica_spec
from serving.vllm_replica import replica_argv

SIM_PROFILES = Path(__file__).resolve().parents[2] / "serving" / "sim" / "profiles"
TWINNED = sorted(name for name, p in PROFILES.items() if p.sim_profile is not None)


@pytest.mark.parametrize("name", TWINNED)
def test_a_simulator_twin_models_the_same_kind_of_replica(name):
    """Benchmarks (simulated) and deployments (real) speak of the same replica."""
    profile = PROFILES[name]
    sim = yaml.safe_load((SIM_PROFILES / f"{profile.sim_profile}.yaml").read_text())
    if profile.model.hub is not None:
        assert sim["model_path"] == profile.model.hub
    assert sim["engine"]["max_model_len"] >= 2048
    assert (profile.device == "gpu") == sim["name"].startswith("h100-")


def test_every_kind_the_brief_asks_for_has_a_profile():
    cpu = {p.variant for p in PROFILES.values() if p.device == "cpu"}
    assert cpu == {"standard", "fast-int4", "fast-spec", "fast-int8", "fast-int8-compiled", "fast-bnb4"}
    gpu = {p.name for p in PROFILES.values() if p.device == "gpu"}
    assert gpu == {f"h100-70b-{k}" for k in ("bf16", "fp8", "w4a16", "bnb4", "ngram", "eagle3", "fp8-ngram")}


def without_placement(argv):
    """argv from ``--max-model-len`` on: what does not depend on where the replica runs."""
    return argv[argv.index("--max-model-len"):]


@pytest.mark.parametrize("name", sorted(n for n, p in PROFILES.items() if p.device == "cpu"))
def test_cpu_profiles_launch_replicas_as_the_local_runner_does(name):
    profile = PROFILES[name]
    local = replica_argv(local_replica_spec(profile, Path("/m"), "smollm2-fast", 8102, 1, 2048), Path("python"))
    deployed = vllm_args(profile, "smollm2-fast", 2048)
    assert without_placement(deployed) == without_placement(local)


def test_cpu_models_are_the_folders_of_the_mounted_model_cache():
    """compose and kind mount ~/.cache/duet/models at /models: the folder names must be the cache's."""
    assert vllm_args(PROFILES["cpu-smollm2-bf16"], "s", 2048)[1] == "/models/smollm2-135m-instruct"
    assert vllm_args(PROFILES["cpu-smollm2-int4"], "s", 2048)[1] == "/models/smollm2-135m-instruct-w4a16"


def test_args_carry_the_configs_names_and_context():
    args = vllm_args(PROFILES["h100-70b-fp8"], "llama-3-70b-fp8", 32768, port=9000)
    assert args[:10] == ["--model", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "--served-model-name", "llama-3-70b-fp8",
                         "--host", "0.0.0.0", "--port", "9000", "--max-model-len", "32768"]
    assert args[args.index("--tensor-parallel-size") + 1] == str(PROFILES["h100-70b-fp8"].gpus)
