"""The small results file of a ``duet bench slo`` run (``--results docs/results/bench-slo/<name>.json``):
what docs/benchmarks.md's bench-slo section is rendered from (``loadtests.benchmarks.slo.render``).

It keeps, from the run folder's ``summary.json``, the command line, the date, the host (CPU model,
AVX-512 or not, the 1-minute load average at each run's start and end, the git commit) and per
policy and rate: requests, budgets met, good requests, cost, TTFT and TPOT p50 / p90 / p99, the
variant mix and the errors. The per-request records, plots and locust HTML stay in the run folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadtests.benchmarks.overhead.report.results import cpu_model
from loadtests.benchmarks.slo.bench import BenchSettings, code_version
from serving.hardware import this_machine

ERRORS_KEPT = 3  # most frequent error kinds per run


def host_facts() -> dict[str, Any]:
    """This machine: CPU model and count, hardware class, AVX-512 or not."""
    hardware = this_machine()
    return {"cpu_model": cpu_model(), "cpus": os.cpu_count(), "hardware_class": hardware.hardware_class,
            "avx512": "avx512f" in hardware.cpu_flags}


def code_of(timed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The commit(s) and uncommitted files the runs recorded at their start; the tree as it is
    now, said so, for run folders from before runs recorded it."""
    commits = sorted({t["git_commit"] for t in timed if "git_commit" in t})
    if not commits:
        return {**code_version(), "recorded": "when the results were written, not by the runs"}
    return {"git_commit": ", ".join(commits), "uncommitted": sorted({p for t in timed for p in t["uncommitted"]}),
            "recorded": "by each run at its start"}


def _latency(stats: Mapping[str, float | None]) -> dict[str, float | None]:
    return {q: stats[q] for q in ("p50", "p90", "p99")}


def run_entry(summary: Mapping[str, Any]) -> dict[str, Any]:
    """One (policy, rate) of a run folder's ``summary.json``, reduced to what the docs show."""
    overall = summary["overall"]
    return {
        "policy": summary["policy"], "rate_scale": summary["rate_scale"], "offered_rps": summary["offered_rps"],
        "requests": overall["requests"], "budgets_met": overall["met_slo"], "attainment": overall["attainment"],
        "good_requests": overall["good_requests"], "good_fraction": overall["good_fraction"],
        "quality_misses": overall["quality_misses"], "failed": overall["failed"], "unfinished": overall["unfinished"],
        "errors": dict(list(overall["errors"].items())[:ERRORS_KEPT]),
        "cost_usd": overall["cost_usd"], "cost_per_1k_requests_usd": overall["cost_per_1k_requests_usd"],
        "ttft_ms": _latency(overall["ttft_ms"]), "tpot_ms": _latency(overall["tpot_ms"]),
        "variant_mix": overall["variant_mix"],
        "tasks": {task: {"requests": g["requests"], "budgets_met": g["met_slo"], "good_requests": g["good_requests"]}
                  for task, g in summary["tasks"].items()},
        "host": summary.get("host"),
    }


def results(report: Mapping[str, Any], settings: BenchSettings, host: Mapping[str, Any], note: str = "") -> dict[str, Any]:
    """The results file's content from a report (``runner.write_report``'s), ``host_facts()`` and
    the operator's ``note`` (what the numbers need beside them)."""
    runs = [run_entry(s) for s in report["runs"]]
    timed = [r["host"] for r in runs if r["host"]]
    replica_set = settings.replica_set
    return {
        "command": report["command"],
        "date": timed[0]["started_utc"] if timed else None,
        "note": note,
        "code": code_of(timed),
        "host": {**host, "load_avg_1m": {"first_start": timed[0]["load_avg_1m"][0] if timed else None,
                                          "last_end": timed[-1]["load_avg_1m"][1] if timed else None,
                                          "peak": max((x for t in timed for x in t["load_avg_1m"]), default=None)},
                 "wall_s": round(sum(t["wall_s"] for t in timed), 1)},
        "settings": {
            "replicas": replica_set.name, "replica_counts": {v.name: v.replicas for v in replica_set.variants},
            "profiles": {v.name: v.profile for v in replica_set.variants},
            "prices": {v.name: [v.price.input_per_mtok, v.price.output_per_mtok] for v in replica_set.variants},
            "parity": {v: None if t is None else sorted(t) for v, t in replica_set.parity.items()},
            "traces": list(settings.traces), "trace_start_s": settings.trace_start_s,
            "duration_model_s": settings.duration_s, "time_scale": settings.time_scale,
            "slos": {t: [s.ttft_ms, s.tpot_ms] for t, s in settings.slos.items()},
            # Duet's speed prior per variant: its profile's with prefill rate / and step times x these
            "prior_error": {v: {"prefill": p, "decode": d} for v, (p, d) in settings.prior_errors().factors.items()},
            # Whether requests forced their traced lengths (the gateway then knew them: an oracle)
            "output_length": "forced (the gateway knows it: oracle)" if settings.forced_length else "natural",
        },
        "goodput": report["goodput"],
        "runs": runs,
    }


def write(path: Path, content: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=1) + "\n")


def rates(content: Mapping[str, Any]) -> Sequence[float]:
    """The rate scales of a results file, lowest first."""
    return sorted({r["rate_scale"] for r in content["runs"]})
