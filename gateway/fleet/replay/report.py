"""Summaries of replayed requests: SLO attainment (overall and by task), good requests (budget met
on a variant parity allows for the task), goodput, cost, variant mix, TTFT and TPOT percentiles,
and the latency predictor's error (MAPE) per variant."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.fleet.replay.request_result import RequestResult

# variant -> the task types parity allows on it (None: all), the same verdicts for every policy.
Parity = Mapping[str, frozenset[str] | None]


def allowed(result: RequestResult, parity: Parity) -> bool:
    """Whether the variant that served the request keeps the task's quality (a refused request
    is no quality miss: it was not served)."""
    if result.variant is None:
        return True
    tasks = parity.get(result.variant)
    return tasks is None or result.task in tasks


def summarize(results: Sequence[RequestResult], duration_s: float, parity: Parity | None = None) -> dict[str, Any]:
    """One policy's numbers. Goodput is requests per second that met every budget of theirs; a
    good request met its budgets on a variant ``parity`` allows for its task (a served request
    that parity refuses is a quality miss, whatever its latency)."""
    parity = parity or {}
    total = len(results)
    met = sum(r.met_slo for r in results)
    good = sum(r.met_slo and allowed(r, parity) for r in results)
    quality_misses = sum(not allowed(r, parity) for r in results)
    by_task: dict[str, list[RequestResult]] = defaultdict(list)
    for r in results:
        by_task[r.task].append(r)
    mix = Counter(r.variant or "rejected" for r in results)
    cost = sum(r.cost_usd for r in results)
    served_prompt_tokens = sum(r.input_tokens for r in results if r.status == "ok")
    return {
        "requests": total,
        "slo_attainment": round(met / total, 4) if total else 0.0,
        "slo_attainment_by_task": {task: round(sum(r.met_slo for r in rs) / len(rs), 4) for task, rs in sorted(by_task.items())},
        "good_requests": good,
        "good_fraction": round(good / total, 4) if total else 0.0,
        "quality_misses": quality_misses,
        "goodput_rps": round(met / duration_s, 3) if duration_s > 0 else 0.0,
        "cost_usd": round(cost, 4),
        "cost_per_1k_requests_usd": round(1000 * cost / total, 4) if total else 0.0,
        "variant_mix": {name: round(count / total, 4) for name, count in sorted(mix.items())},
        "rejected": mix.get("rejected", 0),
        "ttft_ms": percentiles([r.ttft_s for r in results]),
        "tpot_ms": percentiles([r.tpot_s for r in results]),
        # vLLM's hit rate over the replicas: prompt tokens found cached / prompt tokens served.
        "prefix_hit_rate": round(sum(r.cached_tokens for r in results) / served_prompt_tokens, 4)
        if served_prompt_tokens else 0.0,
        "predictor_mape": predictor_mape(results),
        "step_model_mape": predictor_mape(results, step_model=True),
    }


def percentiles(seconds: Sequence[float | None]) -> dict[str, float | None]:
    """p50, p90 and p99 in milliseconds (nearest rank) of the values that exist."""
    values = sorted(s for s in seconds if s is not None)
    if not values:
        return {"p50": None, "p90": None, "p99": None}
    return {f"p{q}": round(1e3 * values[min(len(values) - 1, math.ceil(q / 100 * len(values)) - 1)], 1)
            for q in (50, 90, 99)}


def predictor_mape(results: Sequence[RequestResult], *, step_model: bool = False) -> dict[str, dict[str, float]]:
    """Mean absolute percentage error of the predicted TTFT and end-to-end latency, per variant,
    over requests that finished and had a prediction: the policy's own predictor's, or with
    ``step_model`` Duet's step model's on the same requests (whatever the policy predicted)."""
    errors: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"ttft": [], "e2e": []})
    for r in results:
        predicted = r.step_model if step_model else r.predicted
        if r.status != "ok" or predicted is None or r.variant is None or not r.ttft_s or not r.e2e_s:
            continue
        errors[r.variant]["ttft"].append(abs(predicted.ttft_ms / 1e3 - r.ttft_s) / r.ttft_s)
        errors[r.variant]["e2e"].append(abs(predicted.e2e_ms / 1e3 - r.e2e_s) / r.e2e_s)
    return {
        variant: {metric: round(sum(xs) / len(xs), 4) for metric, xs in metrics.items() if xs}
        for variant, metrics in sorted(errors.items())
    }


def table(summaries: dict[str, dict[str, Any]]) -> str:
    """A Markdown table of policies side by side."""
    tasks = sorted({t for s in summaries.values() for t in s["slo_attainment_by_task"]})
    head = ["policy", "SLO met", "good", "quality misses", *[f"{t} met" for t in tasks], "cost $", "$ / 1k req",
            "TTFT p50/p90/p99 ms", "TPOT p50/p90/p99 ms", "variant mix", "step-model e2e MAPE"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in summaries.items():
        mix = ", ".join(f"{v} {p:.0%}" for v, p in s["variant_mix"].items())
        mape = ", ".join(f"{v} {m.get('e2e', 0):.0%}" for v, m in s["step_model_mape"].items()) or "—"
        cells = [name, f"{s['slo_attainment']:.2%}", f"{s['good_fraction']:.2%}", str(s["quality_misses"]),
                 *[f"{s['slo_attainment_by_task'].get(t, 0):.1%}" for t in tasks], f"{s['cost_usd']:.2f}",
                 f"{s['cost_per_1k_requests_usd']:.3f}", latency_cells(s["ttft_ms"]), latency_cells(s["tpot_ms"]), mix, mape]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def latency_cells(p: Mapping[str, float | None]) -> str:
    """p50/p90/p99 as one table cell, in whole milliseconds."""
    return "/".join("—" if p[k] is None else f"{p[k]:.0f}" for k in ("p50", "p90", "p99"))
