"""From per-request records to a run's summary: attainment, good requests, goodput, cost, latency
percentiles, the variant mix and the errors, overall and per task (all in model time). Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from gateway.fleet.replay.report import Parity, allowed
from gateway.flow import Price
from loadtests.scoring.slo import RequestRecord, Slo, attainment, meets_its_task, percentile

# How much of an error message names its kind (the rest is a request's own detail).
ERROR_KIND_CHARS = 80


def load_records(path: Path, time_scale: float = 1.0) -> list[RequestRecord]:
    """Records from a ``--duet-records`` JSON-lines file, converted to model time."""
    if not path.exists():
        return []
    records = []
    for line in path.read_bytes().splitlines():
        raw = orjson.loads(line)
        records.append(RequestRecord(
            task=raw["task"], variant=raw["variant"], started_s=raw["started_s"], ok=raw["ok"], ttft_s=raw["ttft_s"],
            latency_s=raw["latency_s"], input_tokens=raw["input_tokens"], output_tokens=raw["output_tokens"],
            itl_s=tuple(raw["itl_s"]), lag_s=raw["lag_s"], error=raw["error"],
        ).in_model_time(time_scale))
    return records


def request_cost(record: RequestRecord, prices: Mapping[str, Price]) -> float:
    """USD at the serving variant's price (0 for a variant without one, e.g. a failed request)."""
    price = prices.get(record.variant)
    return price.cost_usd(record.input_tokens, record.output_tokens) if price else 0.0


def _ms(values: Iterable[float]) -> dict[str, float | None]:
    ordered = [v * 1e3 for v in values]
    return {f"p{q}": _round(percentile(ordered, q)) for q in (50, 90, 99)} | {
        "mean": _round(sum(ordered) / len(ordered)) if ordered else None}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def unfinished_records(scheduled: Mapping[str, int], records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """Failed placeholders for arrivals that never finished (still queued when the run stopped):
    left out, they would make an overloaded run look better than it was."""
    done = Counter(r.task for r in records)
    return [RequestRecord(task=task, variant="unfinished", started_s=0.0, ok=False, ttft_s=None, latency_s=0.0,
                          input_tokens=0, output_tokens=0, error="not finished when the run ended")
            for task, count in scheduled.items() for _ in range(max(0, count - done[task]))]


def good(record: RequestRecord, slos: Mapping[str, Slo], parity: Parity) -> bool:
    """Met its budget on a variant ``parity`` allows for its task: the replay's *good request*
    (``gateway.fleet.replay.report.allowed`` judges the variant)."""
    return meets_its_task(record, slos) and allowed(record, parity)  # type: ignore[arg-type]  # reads .variant and .task only


def error_kinds(records: Iterable[RequestRecord]) -> dict[str, int]:
    """Failed requests by the start of their error message, most frequent first."""
    kinds = Counter((r.error or "no token streamed")[:ERROR_KIND_CHARS] for r in records if not r.ok)
    return dict(kinds.most_common())


def group_summary(records: Sequence[RequestRecord], slos: Mapping[str, Slo], prices: Mapping[str, Price],
                  duration_s: float, parity: Parity | None = None) -> dict[str, Any]:
    """The numbers for one group of requests over ``duration_s`` model seconds; ``parity`` (variant
    -> tasks allowed on it, None: all) decides which budget-meeting requests are good."""
    parity = parity or {}
    result = attainment(records, slos, duration_s)
    good_requests = sum(good(r, slos, parity) for r in records)
    cost = sum(request_cost(r, prices) for r in records)
    mix = Counter(r.variant for r in records if r.ok)
    served = sum(mix.values())
    ok = [r for r in records if r.ok]
    return {
        "requests": result.requests,
        "failed": result.failed,
        "unfinished": sum(1 for r in records if r.variant == "unfinished"),
        "met_slo": result.met,
        "attainment": round(result.share, 4),
        "good_requests": good_requests,
        "good_fraction": round(good_requests / len(records), 4) if records else 0.0,
        # Served where parity refuses the task, whatever the latency (the replay's quality miss).
        "quality_misses": sum(not allowed(r, parity) for r in records),  # type: ignore[arg-type]
        "throughput_rps": round(result.throughput_rps, 3),
        "goodput_rps": round(result.goodput_rps, 3),
        "cost_usd": round(cost, 6),
        "cost_per_1k_requests_usd": round(1000 * cost / len(ok), 4) if ok else None,
        "variant_mix": {v: round(n / served, 4) for v, n in sorted(mix.items())},
        "ttft_ms": _ms(r.ttft_s for r in ok if r.ttft_s is not None),
        "tpot_ms": _ms(t for r in ok if (t := r.tpot_s) is not None),
        "itl_ms": _ms(x for r in ok for x in r.itl_s),
        "e2e_ms": _ms(r.latency_s for r in ok),
        "lag_ms": _ms(r.lag_s for r in records),
        "output_tokens": sum(r.output_tokens for r in ok),
        "errors": error_kinds(records),
    }


def run_summary(records: Sequence[RequestRecord], slos: Mapping[str, Slo], prices: Mapping[str, Price],
                duration_s: float, meta: Mapping[str, Any], parity: Parity | None = None) -> dict[str, Any]:
    """``meta`` (policy, rates, scales) plus the overall, per-task and per-variant summaries."""
    tasks = sorted({r.task for r in records})
    variants = sorted({r.variant for r in records if r.ok})

    def of(group: Sequence[RequestRecord]) -> dict[str, Any]:
        return group_summary(group, slos, prices, duration_s, parity)

    return {
        **meta,
        "slos": {t: {"ttft_ms": s.ttft_ms, "tpot_ms": s.tpot_ms} for t, s in slos.items() if t in tasks},
        "parity": {v: None if t is None else sorted(t) for v, t in (parity or {}).items()},
        "overall": of(records),
        "tasks": {t: of([r for r in records if r.task == t]) for t in tasks},
        "variants": {v: of([r for r in records if r.variant == v]) for v in variants},
    }
