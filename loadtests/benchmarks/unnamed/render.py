"""docs/routing.md's "When clients name no task" table: the knee of Duet's policy and of the best
baseline with every request naming its task (``x-duet-task``, as every other replay here) and
with none naming it (``duet replay --unnamed-share 1``: each gets what the shipped detector
answered on an unseen prompt of its task), and with none naming it but some tasks' applications
keyed with their task (``--keyed-tasks``: ``duet keys create --tasks``), rendered from the committed sweeps in
``docs/results/unnamed/*.json``. ``python -m loadtests.sections`` rewrites it; the registry's
test checks the docs hold exactly what the files render to."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.sweep.render import load_cell, ratio_cell

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results" / "unnamed"


def _option(command: str, name: str) -> str | None:
    words = command.split()
    return dict(zip(words, words[1:], strict=False)).get(name)


def unnamed_share(command: str) -> float:
    """The share of requests naming no task, read from the sweep's command (0 when not given)."""
    return float(_option(command, "--unnamed-share") or 0.0)


def keyed_tasks(command: str) -> tuple[str, ...]:
    """The tasks whose unnamed requests came on a key naming them (``--keyed-tasks``; none when not given)."""
    return tuple(t for t in (_option(command, "--keyed-tasks") or "").split(",") if t)


def load(results_dir: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    results = []
    for path in sorted(results_dir.glob("*.json")):
        result = json.loads(path.read_text())
        result["unnamed_share"] = unnamed_share(result["command"])
        result["keyed_tasks"] = keyed_tasks(result["command"])
        results.append(result)
    return results


def _rows(result: Mapping[str, Any]) -> list[str]:
    named = f"{1 - result['unnamed_share']:.0%}"
    if result.get("keyed_tasks"):
        named += f"; {', '.join(result['keyed_tasks'])} keyed"
    rows = []
    for entry in result["crossings"]:
        comparison = entry["comparison"]
        subject, baseline = comparison["subject"], comparison["best_baseline"]
        policies = entry["policies"]
        rows.append(f"| `{result['replicas']}` | {named} | {entry['constraint']} | {load_cell(policies[subject]['load'])} | "
                    f"{baseline} {load_cell(policies[baseline]['load'])} | {ratio_cell(comparison['ratio'])} |")
    return rows


def render(results: Sequence[Mapping[str, Any]]) -> str:
    ordered = sorted(results, key=lambda r: (r["replicas"], r["unnamed_share"], r.get("keyed_tasks", ())))
    lines = ["Knees on held-out windows (virtual time; seeds and loads in each command below), each policy at "
             "its highest load holding the constraint, as `duet replay --sweep` reports them.", "",
             "| replicas | requests naming their task (keyed: their application's API key names it) | constraint | duet-fixed | "
             "best baseline | duet-fixed / it |",
             "|---|---|---|---|---|---|"]
    for result in ordered:
        lines += _rows(result)
    lines += ["", "```sh", *(r["command"] for r in ordered), "```"]
    return "\n".join(lines)
