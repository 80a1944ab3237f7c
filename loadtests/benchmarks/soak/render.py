"""The Soak section of docs/reliability.md, rendered from the committed soak summaries
(``docs/results/soak-*.json``, written by ``python -m loadtests.benchmarks.soak.bench --results``), newest first;
``python -m loadtests.sections`` writes it and the registry's test checks the committed document holds
exactly what the files render to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results"
# The rule of the harness before idle counts existed: under-load medians within this many.
EARLIER_FD_BOUND = 10

INTRO = """\
`make soak` (`python -m loadtests.benchmarks.soak.bench --duration 600 --out runs/soak`; add `--results
docs/results/soak-DATE.json` to keep the summary) runs four simulated replicas (`cpu-smollm2-bf16` at
time scale 4, two per variant of the demo model) behind one gateway. It measures the capacity first
(32 clients in a closed loop for 20 s), then offers 70% of it as open-loop Poisson arrivals: 40%
streamed chat, 30% plain chat, 10% completions, 8% streams pinned to the fast variant, 7% with an
800 ms latency budget, 5% invalid (`max_tokens: -1`, expected 400). One replica is SIGKILLed every
45 s and restarted on its port 10 s later. Every request ends `ok`, a clear error (a 4xx with an
OpenAI error body, or a stream ended by an error event and `[DONE]`) or **lost** (a gateway 5xx
however clear its body, a reset, a stream cut without `[DONE]`, no answer within 120 s). A leak
is judged on the gateway's descriptors counted idle, after the capacity run and after the soak
(nothing in flight, keep-alive connections closed): under load the count follows the requests in
flight. Each run below is rendered from its committed summary."""


def load(results_dir: Path = RESULTS_DIR) -> list[tuple[str, dict[str, Any]]]:
    """(file name, summary) of every committed soak, newest first."""
    paths = sorted(results_dir.glob("soak-*.json"), reverse=True)
    return [(path.name, json.loads(path.read_text())) for path in paths]


def descriptor_trend(samples: Sequence[Sequence[float]], warmup_s: float = 60.0) -> tuple[float, float] | None:
    """(descriptors per request in flight, descriptors per 10 minutes at equal load): a least-squares
    fit of the descriptor count on the requests in flight and on time after the warm-up. A leak
    shows as a time slope; load alone only in the first. None for samples without in-flight counts."""
    rows = [s for s in samples if len(s) >= 4 and s[0] >= warmup_s]
    if len(rows) < 10:
        return None
    t, fds, flying = (np.array([r[i] for r in rows], dtype=float) for i in (0, 2, 3))
    design = np.column_stack([np.ones_like(t), flying, t / 600.0])
    coefficients, *_ = np.linalg.lstsq(design, fds, rcond=None)
    return float(coefficients[1]), float(coefficients[2])


def verdict_line(summary: Mapping[str, Any]) -> str:
    """PASS or FAIL with the failed rules; a summary from before the idle counts is judged by the
    harness's rule of its time, and says so."""
    if "failed_rules" in summary:
        failed = summary["failed_rules"]
        return "**PASS**" if not failed else "**FAIL**: " + "; ".join(failed)
    rise = summary["fds_at_end"] - summary["fds_after_warmup"]
    held = summary["lost"] == 0 and summary["rss_growth_pct"] < 10 and rise <= EARLIER_FD_BOUND
    return ("**PASS**" if held else "**FAIL**") + (
        f" by the harness of the time, whose descriptor rule compared the medians under load "
        f"(bound +{EARLIER_FD_BOUND}; this run +{rise:g}); it kept no idle counts and no in-flight samples, "
        "so it cannot tell a leak from load")


def _load_average(values: Sequence[float] | None) -> str:
    return " / ".join(f"{v:.1f}" for v in values) if values else "not recorded"


def run_section(name: str, summary: Mapping[str, Any]) -> list[str]:
    """One run: how it ran, then its table."""
    outcomes = summary["outcomes"]
    clear = {k.split(":")[0]: v for k, v in summary["by_kind"].items() if k.endswith(":clear_error")}
    invalid = summary["by_kind"].get("invalid:ok", 0)
    lines = [
        f"### {summary.get('date', name.removeprefix('soak-').removesuffix('.json'))}",
        "",
        f"`{summary.get('command', 'make soak')}` on {summary.get('hardware_class', 'an unrecorded hardware class')}, "
        f"{summary.get('cpus', 'an unrecorded number of')} CPUs; load average (1/5/15 min) "
        f"{_load_average(summary.get('load_average_at_start'))} at the start, "
        f"{_load_average(summary.get('load_average_at_end'))} at the end. Capacity {summary['capacity_rps']} req/s, "
        f"then {summary['duration_s']:g} s at {summary['target_rps']} req/s offered "
        f"({summary['achieved_rps']} achieved). Summary: `docs/results/{name}`.",
        "",
        "| | |",
        "| --- | --- |",
        f"| requests | {summary['requests']:,} |",
        f"| ok (incl. {invalid:,} invalid ones answered 400 as expected) | {outcomes.get('ok', 0):,} |",
        f"| clear errors | {outcomes.get('clear_error', 0):,}"
        + (f" ({', '.join(f'{kind} {n}' for kind, n in sorted(clear.items()))})" if clear else "") + " |",
        f"| **lost** | **{summary['lost']:,}** |",
        f"| replica kills / restarts | {summary['replica_kills']} / {summary['replica_restarts']} |",
        f"| gateway RSS after the warm-up -> at the end (medians of the first and last sixth) | "
        f"{summary['rss_mb_after_warmup']} MB -> {summary['rss_mb_at_end']} MB ({summary['rss_growth_pct']:+g}%; "
        f"max {summary['rss_mb_max']} MB) |",
        f"| descriptors under load, same windows | {summary['fds_after_warmup']:g} -> {summary['fds_at_end']:g} "
        f"(max {summary['fds_max']}) |",
    ]
    if "fds_idle_before" in summary:
        lines.append(f"| **descriptors idle**, after the capacity run -> after the soak | "
                     f"**{summary['fds_idle_before']} -> {summary['fds_idle_after']}** |")
    trend = descriptor_trend(summary.get("samples", []))
    if trend is not None:
        per_request, per_ten_minutes = trend
        lines.append(f"| descriptors fitted on requests in flight and time | {per_request:.2f} per request in flight, "
                     f"{per_ten_minutes:+.1f} per 10 minutes at equal load |")
    lines += [
        f"| gateway at the end | {'alive' if summary['gateway_alive_at_end'] else 'dead'}; SIGTERM -> exit "
        f"{summary['gateway_exit_code_on_sigterm']} |",
        f"| verdict | {verdict_line(summary)} |",
    ]
    return lines


def render(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    lines = [INTRO]
    for name, summary in runs:
        lines += ["", *run_section(name, summary)]
    return "\n".join(lines)
