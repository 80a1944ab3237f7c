"""Summaries of replayed requests: SLO attainment (overall and by task), goodput, cost, variant
mix, and the latency predictor's error (MAPE) per variant."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from loadtests.replay.simulation import RequestResult


def summarize(results: Sequence[RequestResult], duration_s: float) -> dict[str, Any]:
    """One policy's numbers. Goodput is requests per second that met every budget of theirs."""
    total = len(results)
    met = sum(r.met_slo for r in results)
    by_task: dict[str, list[RequestResult]] = defaultdict(list)
    for r in results:
        by_task[r.task].append(r)
    mix = Counter(r.variant or "rejected" for r in results)
    cost = sum(r.cost_usd for r in results)
    return {
        "requests": total,
        "slo_attainment": round(met / total, 4) if total else 0.0,
        "slo_attainment_by_task": {task: round(sum(r.met_slo for r in rs) / len(rs), 4) for task, rs in sorted(by_task.items())},
        "goodput_rps": round(met / duration_s, 3) if duration_s > 0 else 0.0,
        "cost_usd": round(cost, 4),
        "cost_per_1k_requests_usd": round(1000 * cost / total, 4) if total else 0.0,
        "variant_mix": {name: round(count / total, 4) for name, count in sorted(mix.items())},
        "rejected": mix.get("rejected", 0),
        "predictor_mape": predictor_mape(results),
        "step_model_mape": predictor_mape(results, step_model=True),
    }


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
    head = ["policy", "SLO met", *[f"{t} met" for t in tasks], "goodput r/s", "cost $", "$ / 1k req", "variant mix",
            "step-model e2e MAPE"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in summaries.items():
        mix = ", ".join(f"{v} {p:.0%}" for v, p in s["variant_mix"].items())
        mape = ", ".join(f"{v} {m.get('e2e', 0):.0%}" for v, m in s["step_model_mape"].items()) or "—"
        cells = [name, f"{s['slo_attainment']:.1%}", *[f"{s['slo_attainment_by_task'].get(t, 0):.1%}" for t in tasks],
                 f"{s['goodput_rps']:.2f}", f"{s['cost_usd']:.2f}", f"{s['cost_per_1k_requests_usd']:.3f}", mix, mape]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
