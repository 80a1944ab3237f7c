"""The measured vllm-cpu section's source: the committed measurements, where the simulator reads
them (the section itself is checked with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

from loadtests.benchmarks.vllm_cpu import measure
from loadtests.benchmarks.vllm_cpu.benchmarks_section import MEASUREMENTS
from serving.sim.fidelity import vllm_cpu


def test_the_measurements_are_where_the_simulator_reads_them() -> None:
    assert MEASUREMENTS == measure.MEASUREMENTS == vllm_cpu.MEASUREMENTS
