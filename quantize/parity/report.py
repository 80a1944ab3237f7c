"""The parity report: ``parity.json`` (issue #7's shape plus metadata and its own sha256),
``parity.md``, ``parity.png``, and ``items.jsonl`` (every item's two verdicts, for digging)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quantize.errors import ParityError
from quantize.evals.suite import Suite
from quantize.parity.client import Endpoint
from quantize.parity.run import TaskRun
from quantize.parity.stats import RESAMPLES, TaskStats, min_samples
from serving.hardware import Hardware


@dataclass(frozen=True, slots=True)
class RunInfo:
    standard: Endpoint
    candidate: Endpoint
    suite: Suite
    tolerance: float
    command: str
    wall_s: float
    # Where the two endpoints ran (``measured_on``), when the run knows: a verdict holds only on
    # that hardware class (serving.hardware). None: unknown (endpoints given by URL).
    hardware: dict[str, Any] | None = None


def build_report(stats: Sequence[TaskStats], info: RunInfo, *, now: datetime | None = None) -> dict[str, Any]:
    """The report as JSON data; ``report_sha256`` hashes everything else in it (canonical JSON)."""
    tasks = {s.task: _task_entry(s, info.tolerance) for s in stats}
    metadata = {
        "date": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
        "standard": {"url": info.standard.url, "model": info.standard.model},
        "candidate": {"url": info.candidate.url, "model": info.candidate.model},
        "suite": info.suite.name, "suite_sha256": info.suite.sha256(), "samples": info.suite.samples,
        "seed": info.suite.seed, "tolerance": info.tolerance,
        "statistics": f"paired bootstrap, {RESAMPLES} resamples, 95% percentile interval; allowed when the "
                      f"interval's lower bound >= -tolerance and samples >= {min_samples(info.tolerance)} (3/tolerance)",
        "command": info.command, "wall_s": round(info.wall_s, 1),
    }
    if info.hardware is not None:
        metadata["hardware"] = info.hardware
    body = {"tasks": tasks, "metadata": metadata}
    return {**body, "report_sha256": report_sha256(body)}


def measured_on(hardware: Hardware, vllm: str | None, checkpoints: tuple[str | None, str | None],
                recorded: str) -> dict[str, Any]:
    """The report's ``metadata.hardware``: the class and the CPU flags (or GPU) the run's replicas
    ran on, the vLLM that served them, the (standard, candidate) checkpoints' fingerprints, and
    how this was recorded."""
    return {"class": hardware.hardware_class, "cpu_flags": list(hardware.cpu_flags), "gpu": hardware.gpu,
            "vllm": vllm, "standard_checkpoint": checkpoints[0], "candidate_checkpoint": checkpoints[1],
            "recorded": recorded}


def hardware_class(report: dict[str, Any]) -> str | None:
    """The hardware class a report was measured on, or None when it does not say."""
    hardware = report.get("metadata", {}).get("hardware")
    return hardware.get("class") if isinstance(hardware, dict) else None


def with_hardware(report: dict[str, Any], hardware: dict[str, Any]) -> dict[str, Any]:
    """``report`` with ``metadata.hardware`` set and its sha256 computed again: for a report
    measured before reports recorded it, from what was written down about that run (``hardware``
    says so in ``recorded``)."""
    body = {"tasks": report["tasks"], "metadata": {**report["metadata"], "hardware": hardware}}
    return {**body, "report_sha256": report_sha256(body)}


def report_sha256(body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of ``{"tasks", "metadata"}``."""
    canonical = json.dumps({"tasks": body["tasks"], "metadata": body["metadata"]}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def read_report(path: Path) -> dict[str, Any]:
    """A ``parity.json`` whose ``report_sha256`` matches its content (an edited report is refused)."""
    try:
        report = json.loads(path.read_text())
        recorded = report["report_sha256"]
        report["tasks"], report["metadata"]["date"]  # noqa: B018 - the fields --write-policy reads
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ParityError(f"{path}: not a parity report ({type(exc).__name__}: {exc})") from exc
    if report_sha256(report) != recorded:
        raise ParityError(f"{path}: report_sha256 does not match its content (edited after the run?)")
    return dict(report)


def _task_entry(s: TaskStats, tolerance: float) -> dict[str, Any]:
    return {
        "standard_acc": round(s.standard_acc, 4), "candidate_acc": round(s.candidate_acc, 4),
        "diff": round(s.diff, 4), "ci95": [round(s.ci95[0], 4), round(s.ci95[1], 4)], "verdict": s.verdict,
        "tolerance": tolerance, "samples": s.samples, "agreement": round(s.agreement, 4),
        "same_answer": round(s.same_answer, 4),
        "standard_tokens_per_s": round(s.standard_tokens_per_s, 2),
        "candidate_tokens_per_s": round(s.candidate_tokens_per_s, 2),
        "standard_errors": s.standard_errors, "candidate_errors": s.candidate_errors, "reason": s.reason,
    }


def write_report(report: dict[str, Any], runs: Sequence[TaskRun], out: Path) -> list[Path]:
    """Write the four files into ``out`` (created); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "parity.json", out / "parity.md", out / "parity.png", out / "items.jsonl"]
    paths[0].write_text(json.dumps(report, indent=2) + "\n")
    paths[1].write_text(markdown(report))
    plot(report, paths[2])
    paths[3].write_text("".join(json.dumps(row) + "\n" for row in _item_rows(runs)))
    return paths


def markdown(report: dict[str, Any]) -> str:
    meta = report["metadata"]
    lines = [
        "# Capability parity", "",
        f"- standard: `{meta['standard']['model']}` at {meta['standard']['url']}",
        f"- candidate: `{meta['candidate']['model']}` at {meta['candidate']['url']}",
        f"- suite `{meta['suite']}` (sha256 `{meta['suite_sha256'][:16]}`), {meta['samples']} samples per task type, "
        f"seed {meta['seed']}, tolerance {meta['tolerance']}",
        f"- {meta['date']}, {meta['wall_s']} s; report sha256 `{report['report_sha256']}`",
        f"- {meta['statistics']}", *_hardware_lines(meta.get("hardware")), "", f"```sh\n{meta['command']}\n```", "",
        "| task | standard | candidate | diff | 95% CI | verdict | agreement | same answer | tok/s std | tok/s cand "
        "| errors std/cand | why |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for task, t in report["tasks"].items():
        lines.append(
            f"| {task} | {t['standard_acc']:.1%} | {t['candidate_acc']:.1%} | {t['diff']:+.1%} | "
            f"[{t['ci95'][0]:+.1%}, {t['ci95'][1]:+.1%}] | **{t['verdict']}** | {t['agreement']:.1%} | "
            f"{t['same_answer']:.1%} | {t['standard_tokens_per_s']:.1f} | {t['candidate_tokens_per_s']:.1f} | "
            f"{t['standard_errors']}/{t['candidate_errors']} | {t['reason']} |")
    return "\n".join(lines) + "\n"


def _hardware_lines(hardware: dict[str, Any] | None) -> list[str]:
    if hardware is None:
        return ["- hardware: not recorded (the verdicts apply on no particular hardware class)"]
    where = f"GPU {hardware['gpu']}" if hardware.get("gpu") else f"CPU flags {', '.join(hardware['cpu_flags']) or 'none'}"
    checkpoints = (f"checkpoints: standard {hardware['standard_checkpoint'] or 'not recorded'}, "
                   f"candidate {hardware['candidate_checkpoint'] or 'not recorded'}")
    return [f"- hardware class **{hardware['class']}** ({where}), {hardware['vllm'] or 'vLLM unknown'}; {checkpoints}",
            f"- hardware recorded: {hardware['recorded']}"]


def plot(report: dict[str, Any], path: Path) -> None:
    """Accuracy of each endpoint per task type, and the difference with its interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(report["tasks"])
    rows = [report["tasks"][t] for t in tasks]
    x = range(len(tasks))
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    left.bar([i - 0.2 for i in x], [r["standard_acc"] for r in rows], 0.4, label="standard")
    left.bar([i + 0.2 for i in x], [r["candidate_acc"] for r in rows], 0.4, label="candidate")
    left.set_xticks(list(x), tasks, rotation=20)
    left.set_ylim(0, 1.2)
    left.set_ylabel("accuracy")
    left.legend(loc="upper center", ncol=2)
    tolerance = report["metadata"]["tolerance"]
    colors = ["tab:green" if r["verdict"] == "allowed" else "tab:red" for r in rows]
    diffs = [r["diff"] for r in rows]
    errors = [[r["diff"] - r["ci95"][0] for r in rows], [r["ci95"][1] - r["diff"] for r in rows]]
    right.errorbar(list(x), diffs, yerr=errors, fmt="none", ecolor="gray", capsize=4)
    right.scatter(list(x), diffs, c=colors, zorder=3)
    right.axhline(0, color="black", linewidth=0.8)
    right.axhline(-tolerance, color="tab:red", linestyle="--", linewidth=0.8, label=f"-tolerance ({tolerance})")
    right.set_xticks(list(x), tasks, rotation=20)
    right.set_ylabel("candidate - standard (95% CI)")
    right.legend()
    meta = report["metadata"]
    figure.suptitle(f"{meta['candidate']['model']} vs {meta['standard']['model']} ({meta['samples']} per task)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _item_rows(runs: Sequence[TaskRun]) -> list[dict[str, Any]]:
    rows = []
    for run in runs:
        for r in run.results:
            rows.append({"id": r.item.id, "task": r.item.task,
                         **{role: {"correct": a.verdict.correct, "answer": a.verdict.answer[:200],
                                   "detail": a.verdict.detail[:200], "error": a.completion.error,
                                   "tokens": a.completion.completion_tokens,
                                   "latency_s": round(a.completion.latency_s, 3)}
                            for role, a in (("standard", r.standard), ("candidate", r.candidate))}})
    return rows
