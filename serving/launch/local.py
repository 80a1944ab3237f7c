"""A CPU launch profile run here: the local model's build it needs, what is missing (and which
``make`` target builds it), and the ``ReplicaSpec`` that starts it on one core."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from serving.launch.profile import LaunchProfile
from serving.local_model import MODEL_DIRNAME, LocalModelPaths, is_ready
from serving.vllm_replica import ReplicaSpec

CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json")


@dataclass(frozen=True, slots=True)
class Missing:
    """Something a replica needs that is not here, and the make target that builds it."""

    what: str
    make_target: str

    def __str__(self) -> str:
        return f"{self.what} is missing: run `make {self.make_target}`"


def container_model(profile: LaunchProfile) -> str:
    """The ``--model`` value in a container that mounts the local model cache at ``/models``."""
    return profile.model.container_path(MODEL_DIRNAME)


def local_model_dir(profile: LaunchProfile, paths: LocalModelPaths) -> Path:
    """Where the build of the local model that ``profile`` serves lives in this user's cache."""
    build = profile.model.local
    if build is None:
        raise ValueError(f"{profile.name} serves a hub checkpoint ({profile.model.hub}), not the local model")
    return paths.model_dir if build == "bf16" else paths.quantized_dir(build)


def checkpoint_ready(folder: Path) -> bool:
    """A quantized checkpoint is usable once its weights, config (with its quantization) and
    tokenizer are written; quantize/ writes the config last."""
    if not all((folder / name).is_file() for name in CHECKPOINT_FILES):
        return False
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "quantization_config" in config


def missing_for(profiles: Iterable[LaunchProfile], paths: LocalModelPaths, vllm_python: Path) -> list[Missing]:
    """Everything the given profiles need here that is not built yet, each named once."""
    missing: list[Missing] = []
    if not vllm_python.exists():
        missing.append(Missing(f"the vLLM environment ({vllm_python})", "vllm-env"))
    for profile in profiles:
        folder = local_model_dir(profile, paths)
        if profile.model.local == "bf16":
            entry = None if is_ready(folder) else Missing(f"the local model ({folder})", "local-model")
        else:
            entry = None if checkpoint_ready(folder) else Missing(
                f"the {profile.model.local} checkpoint for {profile.variant} ({folder})", "checkpoints")
        if entry is not None and entry not in missing:
            missing.append(entry)
        for package in profile.requires:
            needed = Missing(f"{package} in the vLLM environment (for {profile.variant})", "vllm-env")
            if vllm_python.exists() and not installed(package, vllm_python) and needed not in missing:
                missing.append(needed)
    return missing


def installed(distribution: str, python: Path) -> bool:
    """Whether the venv of ``python`` holds ``distribution`` (read from its site-packages, without
    starting that interpreter)."""
    name = distribution.replace("-", "_")
    return any((python.parents[1] / "lib").glob(f"python3*/site-packages/{name}-*.dist-info"))


def host_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The flags of this machine's CPU (the first ``flags`` line of /proc/cpuinfo)."""
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def unsupported_here(profile: LaunchProfile, flags: frozenset[str]) -> str | None:
    """Why ``profile`` cannot run on a CPU with ``flags``, or None."""
    lacking = [flag for flag in profile.cpu_flags if flag not in flags]
    if not lacking:
        return None
    return f"{profile.variant} ({profile.name}) needs a CPU with {', '.join(lacking)}, which this CPU lacks"


def local_replica_spec(profile: LaunchProfile, model_dir: Path, served_model_name: str, port: int,
                       core: int | None, max_model_len: int) -> ReplicaSpec:
    """The replica of ``profile`` bound to ``core``: the profile's engine arguments and environment
    exactly, plus the placement (port, core, private temp/cache dirs) that ``replica_env`` adds."""
    if profile.device != "cpu":
        raise ValueError(f"{profile.name} is a {profile.device} profile; only cpu profiles run here")
    kv_gb = int(profile.env_value("VLLM_CPU_KVCACHE_SPACE") or 1)
    return ReplicaSpec(
        model_path=model_dir, served_model_name=served_model_name, port=port, core=core, kv_cache_gb=kv_gb,
        dtype=None, seed=None, max_model_len=max_model_len, extra_args=profile.args, profile_env=profile.env,
    )
