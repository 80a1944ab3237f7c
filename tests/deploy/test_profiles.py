from pathlib import Path

import pytest
import yaml

from gateway.deploy.profiles import PROFILES, vllm_args
from serving.vllm_replica import NgramSpeculation, ReplicaSpec, replica_argv

SIM_PROFILES = Path(__file__).resolve().parents[2] / "serving" / "sim" / "profiles"


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_has_a_simulator_twin_serving_the_same_checkpoint(name):
    """Benchmarks (simulated) and deployments (real) speak of the same replica."""
    sim = yaml.safe_load((SIM_PROFILES / f"{name}.yaml").read_text())
    assert sim["model_path"] == PROFILES[name].model
    assert (PROFILES[name].device == "gpu") == name.startswith("h100-")


def flags(argv):
    """argv as {flag: value or None}, without the interpreter, host and port."""
    out, i = {}, 0
    while i < len(argv):
        if argv[i].startswith("--"):
            has_value = i + 1 < len(argv) and not argv[i + 1].startswith("--")
            out[argv[i]] = argv[i + 1] if has_value else None
            i += 2 if has_value else 1
        else:
            i += 1
    return {k: v for k, v in out.items() if k not in ("--host", "--port", "--model")}


@pytest.mark.parametrize("name, speculation", [("cpu-smollm2-bf16", None), ("cpu-smollm2-ngram", NgramSpeculation())])
def test_cpu_profiles_launch_replicas_as_the_local_runner_does(name, speculation):
    spec = ReplicaSpec(Path("/models/SmolLM2-135M-Instruct"), "smollm2-fast", 8102, speculation=speculation)
    local = flags(replica_argv(spec, Path("python")))
    deployed = flags(vllm_args(PROFILES[name], "smollm2-fast", 2048))
    assert deployed == local


def test_args_carry_the_configs_names_and_context():
    args = vllm_args(PROFILES["h100-70b-fp8"], "llama-3-70b-fp8", 32768, port=9000)
    assert args[:10] == ["--model", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "--served-model-name", "llama-3-70b-fp8",
                         "--host", "0.0.0.0", "--port", "9000", "--max-model-len", "32768"]
    assert args[args.index("--tensor-parallel-size") + 1] == str(PROFILES["h100-70b-fp8"].gpus)
