"""Markdown for SLO runs: one run's summary, and the policy comparison table. Pure text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def run_markdown(summary: Mapping[str, Any]) -> str:
    """A run's Markdown summary: SLOs, one row per task and overall, and where the numbers come from."""
    lines = [
        f"# SLO run: {summary['policy']} at rate x{summary['rate_scale']:g}",
        "",
        f"Replicas `{summary['replicas']}`, traces {', '.join(summary['traces'])} from {summary['trace_start_s']:g} s, "
        f"{summary['duration_model_s']:g} s of arrivals ({summary['offered_rps']:g} req/s offered), "
        f"time scale {summary['time_scale']:g} (all times below are model time).",
        "",
        "| task | SLO TTFT / TPOT (ms) | requests | failed | attainment | goodput (req/s) | TTFT p50 / p90 (ms) "
        "| TPOT p50 / p90 (ms) | variant mix | USD / 1k req |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = {**summary["tasks"], "overall": summary["overall"]}
    for name, group in groups.items():
        slo = summary["slos"].get(name)
        slo_text = f"{slo['ttft_ms']:g} / {slo['tpot_ms']:g}" if slo else ""
        mix = ", ".join(f"{v} {100 * s:.0f}%" for v, s in group["variant_mix"].items())
        lines.append(
            f"| {name} | {slo_text} | {group['requests']} | {group['failed']} | {_pct(group['attainment'])} "
            f"| {group['goodput_rps']:.2f} | {_num(group['ttft_ms']['p50'])} / {_num(group['ttft_ms']['p90'])} "
            f"| {_num(group['tpot_ms']['p50'], 1)} / {_num(group['tpot_ms']['p90'], 1)} | {mix} "
            f"| {_num(group['cost_per_1k_requests_usd'], 3)} |"
        )
    lines += ["", f"Traces: {summary['attribution']}", ""]
    return "\n".join(lines)


def comparison_markdown(rows: Sequence[Mapping[str, Any]], goodput: Mapping[str, float | None]) -> str:
    """The comparison table: per policy and rate, attainment (overall and per task), goodput, cost,
    variant mix; then each policy's DistServe goodput."""
    tasks = sorted({k.removeprefix("attainment_") for r in rows for k in r if k.startswith("attainment_")})
    header = ["policy", "offered req/s", "attainment", *[f"{t} att." for t in tasks], "goodput req/s",
              "TTFT p90 ms", "TPOT p90 ms", "fast share", "USD / 1k req", "failed"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in sorted(rows, key=lambda r: (r["rate_scale"], r["policy"])):
        cells = [r["policy"], f"{r['offered_rps']:.2f}", _pct(r["attainment"]),
                 *[_pct(r.get(f"attainment_{t}")) for t in tasks], f"{r['goodput_rps']:.2f}",
                 _num(r["ttft_p90_ms"]), _num(r["tpot_p90_ms"], 1), _pct(r["fast_share"]),
                 _num(r["cost_per_1k_requests_usd"], 3), str(r["failed"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| policy | goodput (max req/s with >= 90% attainment) |", "|---|---|"]
    for policy, value in goodput.items():
        lines.append(f"| {policy} | {'below the lowest rate tried' if value is None else f'{value:.2f}'} |")
    return "\n".join(lines) + "\n"
