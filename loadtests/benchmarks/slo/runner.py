"""Runs a benchmark's (policy, rate) grid with progress on the terminal (rich) and writes the
report folder: per-run folders, ``summary.json``, ``summary.md``, the comparison plot and, for a
single run, its plots and locust HTML at the top."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from gateway.fleet.workload.traces import TraceWindow, replay_arrivals, task_traces
from gateway.fleet.world.policies import policy_name
from loadtests.benchmarks.slo.bench import BenchSettings, comparison_rows, distserve_goodput, run_one, summarize_run
from loadtests.scoring import plots
from loadtests.scoring.report import comparison_markdown, run_markdown


def _expected_requests(settings: BenchSettings, rate: float) -> int:
    window = TraceWindow(settings.duration_s, rate_scale=rate, start_s=settings.trace_start_s)
    return len(replay_arrivals(task_traces(settings.traces), window))


def _updater(progress: Progress, task: TaskID) -> Callable[[int], None]:
    def update(done: int) -> None:
        progress.update(task, completed=done)

    return update


def run_bench(settings: BenchSettings, policies: Sequence[str], rates: Sequence[float], out: Path,
              command: str) -> dict[str, Any]:
    """Every policy at every rate, one after another, then the report; returns summary.json's content."""
    out.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True)
    summaries = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        overall = progress.add_task("runs", total=len(policies) * len(rates))
        for rate in rates:
            for policy in policies:
                name = policy_name(policy)
                run = progress.add_task(f"{name} x{rate:g}", total=_expected_requests(settings, rate))
                summary = run_one(settings, policy, rate, out / f"{name}-x{rate:g}", _updater(progress, run))
                progress.update(run, completed=summary["overall"]["requests"])
                console.print(f"{name} x{rate:g}: {summary['overall']['requests']} requests, "
                              f"attainment {100 * summary['overall']['attainment']:.1f}%, "
                              f"cost/1k ${summary['overall']['cost_per_1k_requests_usd']}")
                summaries.append(summary)
                progress.advance(overall)
    return write_report(settings, summaries, out, command)


def rebuild_report(settings: BenchSettings, policies: Sequence[str], rates: Sequence[float], out: Path,
                   command: str) -> dict[str, Any]:
    """The report again from run folders already in ``out`` (new definitions, no new runs)."""
    summaries = [summarize_run(settings, policy, rate, out / f"{policy_name(policy)}-x{rate:g}")
                 for rate in rates for policy in policies]
    return write_report(settings, summaries, out, command)


def write_report(settings: BenchSettings, summaries: Sequence[dict[str, Any]], out: Path, command: str) -> dict[str, Any]:
    """summary.json, summary.md and the comparison plot (plus a lone run's own files at the top)."""
    rows = comparison_rows(summaries)
    goodput = distserve_goodput(rows)
    report = {"command": command, "offered_rps": {f"{r['rate_scale']:g}": r["offered_rps"] for r in rows},
              "goodput": goodput, "rows": rows, "runs": summaries}
    (out / "summary.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = [f"# duet bench slo\n\n```\n{command}\n```\n", comparison_markdown(rows, goodput)]
    markdown += [run_markdown(s) for s in summaries]
    (out / "summary.md").write_text("\n".join(markdown))
    if len(summaries) > 1:
        plots.comparison(rows, goodput, out / "policy_comparison.png")
    else:
        run_dir = out / f"{summaries[0]['policy']}-x{summaries[0]['rate_scale']:g}"
        for produced in [*run_dir.glob("*.png"), run_dir / "locust.html"]:
            if produced.exists():
                shutil.copy(produced, out / produced.name)
    return report

