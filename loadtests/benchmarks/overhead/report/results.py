"""A bench-overhead run as data: everything the docs section quotes, written to a committed
JSON file (``docs/results/overhead.json``) by the run, so the section is rendered from the file
(``python -m loadtests.sections``) and the registry's test can check that the two agree."""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from loadtests.benchmarks.overhead.measure.phases import Measurement, PhasePlan
from loadtests.benchmarks.overhead.measure.run import RunResult
from loadtests.benchmarks.overhead.measure.wrk import WrkResult
from loadtests.benchmarks.overhead.stack.launch import Unavailable
from serving.hardware import this_machine

RESULTS = Path(__file__).resolve().parents[4] / "docs" / "results" / "overhead.json"


@dataclass(frozen=True, slots=True)
class Host:
    """The machine a run measured on, as the section describes it."""

    cpus: int
    cpu_model: str
    kernel: str
    hardware_class: str

    @classmethod
    def here(cls) -> Host:
        return cls(os.cpu_count() or 1, cpu_model(), platform.release(), this_machine().hardware_class)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run: what it measured (``result``) and how, where and when."""

    result: RunResult
    command: str
    plan: PhasePlan
    gateway_core: int
    date: str
    host: Host


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" if absent)."""
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def to_json(record: RunRecord) -> dict[str, Any]:
    result = record.result
    return {
        "command": record.command, "date": record.date, "gateway_core": record.gateway_core,
        "plan": asdict(record.plan), "host": asdict(record.host), "versions": result.versions,
        "busy_before": result.busy_before,
        "backend_ceiling": {mode: asdict(wrk) for mode, wrk in result.backend_ceiling.items()},
        "measurements": [{"gateway": m.gateway, "mode": m.mode, "latency": asdict(m.latency),
                          "throughput": asdict(m.throughput), "gateway_cpu": m.gateway_cpu,
                          "companion_cpu": m.companion_cpu}
                         for m in result.measurements],
        "skipped": [asdict(s) for s in result.skipped],
    }


def from_json(data: dict[str, Any]) -> RunRecord:
    result = RunResult(
        measurements=tuple(Measurement(m["gateway"], m["mode"], WrkResult(**m["latency"]), WrkResult(**m["throughput"]),
                                       m["gateway_cpu"], m.get("companion_cpu")) for m in data["measurements"]),
        skipped=tuple(Unavailable(**s) for s in data["skipped"]),
        backend_ceiling={mode: WrkResult(**wrk) for mode, wrk in data["backend_ceiling"].items()},
        versions=dict(data["versions"]), busy_before=dict(data["busy_before"]),
    )
    return RunRecord(result, data["command"], PhasePlan(**data["plan"]), data["gateway_core"], data["date"],
                     Host(**data["host"]))


def write(record: RunRecord, path: Path = RESULTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(record), indent=1) + "\n")


def read(path: Path = RESULTS) -> RunRecord:
    return from_json(json.loads(path.read_text()))
