"""The phases run against one gateway in one mode: warm-up, latency (one connection),
throughput (many connections), with wrk pinned to the load core and the gateway's CPU time
read around the throughput phase.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadtests.benchmarks.overhead.measure.modes import CHAT_MODES, Mode
from loadtests.benchmarks.overhead.measure.wrk import WrkResult, parse_output, wrk_command
from loadtests.benchmarks.overhead.stack.processes import tree_cpu_seconds

# The chat modes by name (what cpu_cost and instructions measure); run.py measures modes.ALL_MODES.
MODES = tuple(mode.name for mode in CHAT_MODES)


@dataclass(frozen=True, slots=True)
class PhasePlan:
    """How long each phase lasts and where wrk runs."""

    warmup_s: float = 2.0
    latency_s: float = 4.0
    throughput_s: float = 10.0
    connections: int = 64
    load_core: int = 0


@dataclass(frozen=True, slots=True)
class Measurement:
    """One gateway in one mode: latency phase, throughput phase, and the gateway's CPU use
    during throughput (1.0 = one core fully busy; ``None`` when no process is measured);
    ``companion_cpu``: the part of it its companions used (an Envoy's picker; None: none)."""

    gateway: str
    mode: str
    latency: WrkResult
    throughput: WrkResult
    gateway_cpu: float | None
    companion_cpu: float | None = None

    @property
    def errors(self) -> int:
        return self.latency.errors + self.throughput.errors


def run_wrk(url: str, script: Path, connections: int, duration_s: float, core: int) -> WrkResult:
    """Run wrk pinned to ``core`` and parse its result line."""
    command = ["taskset", "-c", str(core), *wrk_command(url, str(script), connections, duration_s)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=duration_s + 60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr[-500:]}")
    return parse_output(done.stdout)


def measure(gateway: str, base_url: str, mode: Mode, script: Path, plan: PhasePlan, pids: Sequence[int]) -> Measurement:
    """Warm up, then measure latency on one connection and throughput on ``plan.connections``;
    the gateway's CPU is that of the process trees ``pids`` (an Envoy and its picker together;
    none: not measured; after the first, its companions)."""
    url = f"{base_url}{mode.path}"
    run_wrk(url, script, min(8, plan.connections), plan.warmup_s, plan.load_core)
    latency = run_wrk(url, script, 1, plan.latency_s, plan.load_core)
    cpu_before, wall_before = [tree_cpu_seconds(pid) for pid in pids], time.monotonic()
    throughput = run_wrk(url, script, plan.connections, plan.throughput_s, plan.load_core)
    used = [tree_cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before, strict=True)]
    wall = time.monotonic() - wall_before
    cpu = sum(used) / wall if pids else None
    companions = sum(used[1:]) / wall if len(pids) > 1 else None
    return Measurement(gateway, mode.name, latency, throughput, cpu, companions)
