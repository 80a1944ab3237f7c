"""A pure parser of a vLLM server's ``/metrics`` text into the few numbers Duet routes on.

Parsing is kept apart from fetching (``gateway.state.monitor`` fetches): this module does no I/O
and runs every second per replica, so it is a hand-written line scanner that looks at a line's
metric name before anything else and drops every line it has no use for (histogram buckets,
``_created`` series, Python process metrics, metrics a newer vLLM adds).

vLLM runs one engine per data-parallel rank and labels each series with ``engine="N"``; counters
may carry further labels (``finished_reason`` on ``vllm:request_success_total``). Every quantity
here is summed over all label sets, except the KV-cache fraction, which is averaged (a fraction
of the whole replica's cache, assuming equal-sized engines).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from enum import Enum

# A label block: ``{`` ... ``}``, where quoted values may contain ``}``, spaces and escapes.
_LABELS = re.compile(r'\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\}')


@dataclass(frozen=True, slots=True)
class HistogramTotals:
    """A Prometheus histogram's cumulative ``_sum`` (seconds) and ``_count`` (observations)."""

    sum_s: float
    count: int

    @property
    def mean_s(self) -> float | None:
        """Mean observation since the server started, or None before the first one."""
        return self.sum_s / self.count if self.count else None


@dataclass(frozen=True, slots=True)
class VllmStats:
    """One scrape of a vLLM server. ``None`` means the server did not report that metric.

    Gauges (``running``, ``waiting``, ``kv_cache_usage`` in [0, 1]) are values at scrape time;
    everything else is cumulative since the server started (compare two scrapes for rates).
    """

    running: int | None = None
    waiting: int | None = None
    kv_cache_usage: float | None = None
    prompt_tokens_total: int | None = None
    generation_tokens_total: int | None = None
    request_success_total: int | None = None
    preemptions_total: int | None = None
    prefix_cache_queries_total: int | None = None
    prefix_cache_hits_total: int | None = None
    spec_decode_drafts_total: int | None = None
    spec_decode_draft_tokens_total: int | None = None
    spec_decode_accepted_tokens_total: int | None = None
    ttft: HistogramTotals | None = None
    itl: HistogramTotals | None = None
    tpot: HistogramTotals | None = None
    e2e: HistogramTotals | None = None
    queue: HistogramTotals | None = None
    # When the server's process started (Unix seconds; prometheus_client's standard
    # ``process_start_time_seconds``): a new value means the replica restarted, its caches empty.
    process_start_time_s: float | None = None
    # The engine's role and chunk budget, where the server reports them (``ENGINE_CONFIG``: Duet's
    # simulator does; vLLM has no such metric, so a real replica's come from the config).
    engine_role: str | None = None
    chunk_budget: int | None = None

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """Fraction of prefix-cache token queries that hit, since start, in [0, 1]."""
        return _ratio(self.prefix_cache_hits_total, self.prefix_cache_queries_total)

    @property
    def spec_decode_acceptance_rate(self) -> float | None:
        """Fraction of drafted tokens the target model accepted, since start, in [0, 1]."""
        return _ratio(self.spec_decode_accepted_tokens_total, self.spec_decode_draft_tokens_total)


def _ratio(part: int | None, whole: int | None) -> float | None:
    return part / whole if part is not None and whole else None


def prefix_hit_rate_between(before: VllmStats | None, after: VllmStats) -> float | None:
    """Fraction of prompt tokens the prefix cache served between two scrapes, in [0, 1]; None
    without queries in between, or when the counters went back (the server restarted)."""
    if before is None or None in (before.prefix_cache_hits_total, before.prefix_cache_queries_total,
                                  after.prefix_cache_hits_total, after.prefix_cache_queries_total):
        return None
    hits = after.prefix_cache_hits_total - before.prefix_cache_hits_total  # type: ignore[operator]
    queries = after.prefix_cache_queries_total - before.prefix_cache_queries_total  # type: ignore[operator]
    if queries <= 0 or hits < 0:
        return None
    return min(1.0, hits / queries)


class _Kind(Enum):
    """How samples of one metric are folded together."""

    SUM = "sum"
    MEAN = "mean"


# Metric name -> (VllmStats field or histogram accumulator key, how to fold label sets).
_SCALARS: dict[str, tuple[str, _Kind]] = {
    "vllm:num_requests_running": ("running", _Kind.SUM),
    "vllm:num_requests_waiting": ("waiting", _Kind.SUM),
    "vllm:kv_cache_usage_perc": ("kv_cache_usage", _Kind.MEAN),
    "vllm:prompt_tokens_total": ("prompt_tokens_total", _Kind.SUM),
    "vllm:generation_tokens_total": ("generation_tokens_total", _Kind.SUM),
    "vllm:request_success_total": ("request_success_total", _Kind.SUM),
    "vllm:num_preemptions_total": ("preemptions_total", _Kind.SUM),
    "vllm:prefix_cache_queries_total": ("prefix_cache_queries_total", _Kind.SUM),
    "vllm:prefix_cache_hits_total": ("prefix_cache_hits_total", _Kind.SUM),
    "vllm:spec_decode_num_drafts_total": ("spec_decode_drafts_total", _Kind.SUM),
    "vllm:spec_decode_num_draft_tokens_total": ("spec_decode_draft_tokens_total", _Kind.SUM),
    "vllm:spec_decode_num_accepted_tokens_total": (
        "spec_decode_accepted_tokens_total",
        _Kind.SUM,
    ),
}
# Servers before vLLM 0.11 named the KV-cache gauge this way; the current name wins if both appear.
_KV_ALIAS = "vllm:gpu_cache_usage_perc"

_HISTOGRAMS: dict[str, str] = {
    "vllm:time_to_first_token_seconds": "ttft",
    "vllm:inter_token_latency_seconds": "itl",
    "vllm:request_time_per_output_token_seconds": "tpot",
    "vllm:e2e_request_latency_seconds": "e2e",
    "vllm:request_queue_time_seconds": "queue",
}

_WANTED: dict[str, tuple[str, _Kind]] = {
    **_SCALARS,
    _KV_ALIAS: ("kv_cache_usage_alias", _Kind.MEAN),
    **{f"{name}_sum": (f"{key}.sum", _Kind.SUM) for name, key in _HISTOGRAMS.items()},
    **{f"{name}_count": (f"{key}.count", _Kind.SUM) for name, key in _HISTOGRAMS.items()},
}

_KINDS: dict[str, _Kind] = {key: kind for key, kind in _WANTED.values()}
# The one wanted metric outside vLLM's namespace (a process collector's, unlabelled).
_START_TIME = "process_start_time_seconds "
# An info gauge (value 1) whose labels say how the engine is configured: ``role`` (both, prefill,
# decode) and ``max_num_batched_tokens``. Not vLLM's: a server that knows its role says it here.
ENGINE_CONFIG = "duet:engine_config_info"
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_vllm_metrics(text: str) -> VllmStats:
    """Read a Prometheus text exposition from vLLM's ``/metrics`` into a ``VllmStats``.

    Unknown metrics, comments and lines that do not parse are skipped, so a scrape from a newer
    or older server still yields whatever it shares with vLLM 0.33's names.
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    engine: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith(_START_TIME):
            sums["start"] = _float(line[len(_START_TIME):].split()[0])
            continue
        if line.startswith(ENGINE_CONFIG):
            engine = dict(_LABEL.findall(line))
            continue
        sample = _sample(line)
        if sample is None:
            continue
        key, value = sample
        sums[key] = sums.get(key, 0.0) + value
        counts[key] = counts.get(key, 0) + 1
    stats = _build(_fold(sums, counts))
    if not engine:
        return stats
    budget = engine.get("max_num_batched_tokens", "")
    return dataclasses.replace(stats, engine_role=engine.get("role"),
                               chunk_budget=int(budget) if budget.isdigit() else None)


def _sample(line: str) -> tuple[str, float] | None:
    """The (accumulator key, value) of one wanted sample line, or None for any other line."""
    if not line.startswith("vllm:"):
        return None
    brace, space = line.find("{"), line.find(" ")
    if space < 0:
        return None
    labelled = 0 <= brace < space
    wanted = _WANTED.get(line[:brace] if labelled else line[:space])
    if wanted is None:
        return None
    rest = line[space:]
    if labelled:
        match = _LABELS.match(line, brace)
        if match is None:
            return None
        rest = line[match.end() :]
    # After the labels: the value, then an optional timestamp.
    fields = rest.split()
    try:
        value = float(fields[0])
    except (IndexError, ValueError):
        return None
    return (wanted[0], value) if math.isfinite(value) else None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value


def _fold(sums: dict[str, float], counts: dict[str, int]) -> dict[str, float]:
    """Collapse label sets: sum, or mean for the metrics folded by mean."""
    return {
        key: total / counts[key] if _KINDS.get(key) is _Kind.MEAN else total
        for key, total in sums.items() if math.isfinite(total)
    }


def _build(values: dict[str, float]) -> VllmStats:
    def count(key: str) -> int | None:
        return round(values[key]) if key in values else None

    def histogram(key: str) -> HistogramTotals | None:
        total, n = values.get(f"{key}.sum"), values.get(f"{key}.count")
        return None if total is None or n is None else HistogramTotals(total, round(n))

    return VllmStats(
        running=count("running"),
        waiting=count("waiting"),
        kv_cache_usage=values.get("kv_cache_usage", values.get("kv_cache_usage_alias")),
        prompt_tokens_total=count("prompt_tokens_total"),
        generation_tokens_total=count("generation_tokens_total"),
        request_success_total=count("request_success_total"),
        preemptions_total=count("preemptions_total"),
        prefix_cache_queries_total=count("prefix_cache_queries_total"),
        prefix_cache_hits_total=count("prefix_cache_hits_total"),
        spec_decode_drafts_total=count("spec_decode_drafts_total"),
        spec_decode_draft_tokens_total=count("spec_decode_draft_tokens_total"),
        spec_decode_accepted_tokens_total=count("spec_decode_accepted_tokens_total"),
        ttft=histogram("ttft"),
        itl=histogram("itl"),
        tpot=histogram("tpot"),
        e2e=histogram("e2e"),
        queue=histogram("queue"),
        process_start_time_s=values.get("start"),
    )
