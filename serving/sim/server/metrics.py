"""/metrics with vLLM's families, labels (``model_name``, ``engine``) and histogram buckets
(catalogue in ``vllm_metrics``).

Gauges and counters are read from the engine at scrape time; histograms are observed from
engine events as they happen. Times are the model's (virtual) seconds: with ``--time-scale``
the numbers stay those of the simulated hardware. Families vLLM exports but the model has no
notion of (multi-modal cache, KV transfer, FLOP estimates) are present and stay at zero.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Event, Finished, TokensOut
from serving.sim.profile import Profile
from serving.sim.server.vllm_metrics import (
    CACHE_CONFIG_DEFAULTS,
    FINISH_REASONS,
    HELP,
    HISTOGRAMS,
    ITERATION_TOKEN_BUCKETS,
    ITL_BUCKETS,
    LABELS,
    N_BUCKETS,
    PREEMPTION_BUCKETS,
    REQUEST_LATENCY_BUCKETS,
    TTFT_BUCKETS,
    token_buckets,
)

# The info gauge the gateway's parser reads (gateway.state.vllm_metrics.ENGINE_CONFIG: the same
# name, written twice as the layers keep serving and gateway apart), and vLLM's kv_role per role.
ENGINE_CONFIG = "duet:engine_config_info"
KV_ROLES = {"both": "kv_both", "prefill": "kv_producer", "decode": "kv_consumer"}


class SimMetrics:
    """One replica's Prometheus registry (not the global one). ``bind(engine)`` before scraping."""

    def __init__(self, profile: Profile, model_name: str) -> None:
        self.profile = profile
        self.labels = (model_name, "0")
        self.registry = CollectorRegistry(auto_describe=False)
        self.finished: dict[str, int] = {}
        self.rejected = 0  # admissions refused because the waiting queue was full
        self.tool_parses: dict[tuple[str, str], int] = {}  # (mode, outcome) -> tool-parser invocations
        self._last_token_time: dict[str, float] = {}
        tokens = token_buckets(profile.engine.max_model_len)
        buckets = {
            "vllm:request_prompt_tokens": tokens, "vllm:request_generation_tokens": tokens,
            "vllm:iteration_tokens_total": ITERATION_TOKEN_BUCKETS, "vllm:request_max_num_generation_tokens": tokens,
            "vllm:request_params_n": N_BUCKETS, "vllm:request_params_max_tokens": tokens,
            "vllm:time_to_first_token_seconds": TTFT_BUCKETS, "vllm:inter_token_latency_seconds": ITL_BUCKETS,
            "vllm:request_time_per_output_token_seconds": ITL_BUCKETS,
            "vllm:request_num_preemptions": PREEMPTION_BUCKETS, "vllm:request_prefill_kv_computed_tokens": tokens,
        }
        self.hist = {name: Histogram(name, doc, LABELS, buckets=buckets.get(name, REQUEST_LATENCY_BUCKETS),
                                     registry=self.registry).labels(*self.labels)
                     for name, doc in HISTOGRAMS.items()}

    def bind(self, engine: Engine) -> None:
        """Export ``engine``'s gauges and counters."""
        self.registry.register(_EngineCollector(engine, self))

    def observe_step(self, tokens: int) -> None:
        """One engine step computed ``tokens`` tokens (the engine's step observer)."""
        self.hist["vllm:iteration_tokens_total"].observe(tokens)

    def observe_params(self, max_tokens: int, n: int) -> None:
        """A request's sampling parameters, recorded on arrival as vLLM does."""
        self.hist["vllm:request_params_max_tokens"].observe(max_tokens)
        self.hist["vllm:request_max_num_generation_tokens"].observe(max_tokens)
        self.hist["vllm:request_params_n"].observe(n)

    def observe_tool_parse(self, streaming: bool, called: bool) -> None:
        """The tool-call parser ran once (per choice, or per streamed delta)."""
        key = ("streaming" if streaming else "non_streaming", "tool_call" if called else "no_tool_call")
        self.tool_parses[key] = self.tool_parses.get(key, 0) + 1

    def observe(self, events: list[Event]) -> None:
        """Record engine events in the histograms."""
        last, itl = self._last_token_time, self.hist["vllm:inter_token_latency_seconds"]
        for event in events:
            if isinstance(event, TokensOut):
                if not event.first:
                    itl.observe(event.time - last.get(event.request_id, event.time))
                last[event.request_id] = event.time
            elif isinstance(event, Finished):
                self._observe_finished(event)
                last.pop(event.request_id, None)

    def _observe_finished(self, event: Finished) -> None:
        self.finished[event.reason] = self.finished.get(event.reason, 0) + 1
        if event.ttft_s is None:
            return  # aborted before its first token: vLLM records no latencies
        hist = self.hist
        decode_s = event.e2e_s - event.ttft_s
        hist["vllm:time_to_first_token_seconds"].observe(event.ttft_s)
        hist["vllm:e2e_request_latency_seconds"].observe(event.e2e_s)
        hist["vllm:request_queue_time_seconds"].observe(event.queued_s)
        hist["vllm:request_prefill_time_seconds"].observe(max(0.0, event.ttft_s - event.queued_s))
        hist["vllm:request_decode_time_seconds"].observe(decode_s)
        hist["vllm:request_inference_time_seconds"].observe(max(0.0, event.e2e_s - event.queued_s))
        if event.output_tokens > 1:
            hist["vllm:request_time_per_output_token_seconds"].observe(decode_s / (event.output_tokens - 1))
        hist["vllm:request_prompt_tokens"].observe(event.prompt_tokens)
        hist["vllm:request_generation_tokens"].observe(event.output_tokens)
        hist["vllm:request_num_preemptions"].observe(event.preemptions)
        hist["vllm:request_prefill_kv_computed_tokens"].observe(event.prompt_tokens - event.cached_tokens)

    def render(self) -> bytes:
        """The /metrics text."""
        return generate_latest(self.registry)


class _EngineCollector:
    """Reads the engine's gauges and counters at scrape time."""

    def __init__(self, engine: Engine, metrics: SimMetrics) -> None:
        self.engine = engine
        self.metrics = metrics
        self.labels = list(metrics.labels)
        self.created = time.time()

    def collect(self) -> Iterator[Metric]:
        snap, counts = self.engine.snapshot(), self.engine.counters
        yield self._gauge("vllm:num_requests_running", snap.running)
        yield self._gauge("vllm:num_requests_waiting", snap.waiting)
        yield self._gauge("vllm:num_requests_waiting_by_reason", reason={"capacity": snap.waiting, "deferred": 0})
        yield self._gauge("vllm:engine_sleep_state", sleep_state={"awake": 1, "weights_offloaded": 0, "discard_all": 0})
        yield self._gauge("vllm:kv_cache_usage_perc", snap.kv_cache_usage)
        computed = counts.prefix_cache_queries - counts.prefix_cache_hits
        for name, value in (
            ("vllm:estimated_flops_per_gpu", 0), ("vllm:estimated_read_bytes_per_gpu", 0),
            ("vllm:estimated_write_bytes_per_gpu", 0),
            ("vllm:prefix_cache_queries", counts.prefix_cache_queries), ("vllm:prefix_cache_hits", counts.prefix_cache_hits),
            ("vllm:external_prefix_cache_queries", 0), ("vllm:external_prefix_cache_hits", 0),
            ("vllm:mm_cache_queries", 0), ("vllm:mm_cache_hits", 0),
            ("vllm:num_preemptions", counts.preemptions), ("vllm:prompt_tokens", counts.prompt_tokens),
            ("vllm:prompt_tokens_cached", counts.prefix_cache_hits), ("vllm:generation_tokens", counts.generation_tokens),
        ):
            yield self._counter(name, {None: value})
        yield self._counter("vllm:prompt_tokens_by_source", {
            "local_compute": computed, "local_cache_hit": counts.prefix_cache_hits, "external_kv_transfer": 0}, "source")
        yield self._counter("vllm:prompt_tokens_cached_by_source", {
            "device": counts.prefix_cache_hits, "host": 0, "disk": 0, "p2p": 0, "external_unspecified": 0}, "source")
        yield self._counter("vllm:request_success", {r: self.metrics.finished.get(r, 0) for r in FINISH_REASONS},
                            "finished_reason")
        rejections = CounterMetricFamily("vllm:admission_rejections", HELP["vllm:admission_rejections"],
                                         labels=["model_name", "reason"])
        for reason, value in (("max_num_queued_reqs", self.metrics.rejected), ("max_num_queued_tokens", 0)):
            rejections.add_metric([self.labels[0], reason], value, created=self.created)
        yield rejections
        yield self._tool_parses()
        if self.engine.profile.speculation is not None:
            yield self._counter("vllm:spec_decode_num_drafts", {None: counts.spec_drafts})
            yield self._counter("vllm:spec_decode_num_draft_tokens", {None: counts.spec_draft_tokens})
            yield self._counter("vllm:spec_decode_num_accepted_tokens", {None: counts.spec_accepted_tokens})
            yield self._counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                                {str(i): n for i, n in enumerate(counts.spec_accepted_per_position)}, "position")
        yield self._cache_config()
        yield self._engine_config()

    def _gauge(self, name: str, value: float = 0.0, **by_label: dict[str, float]) -> GaugeMetricFamily:
        if not by_label:
            family = GaugeMetricFamily(name, HELP[name], labels=list(LABELS))
            family.add_metric(self.labels, value)
            return family
        (label, values), = by_label.items()
        family = GaugeMetricFamily(name, HELP[name], labels=[*LABELS, label])
        for key, amount in values.items():
            family.add_metric([*self.labels, key], amount)
        return family

    def _counter(self, name: str, values: dict[str | None, float], label: str | None = None) -> CounterMetricFamily:
        family = CounterMetricFamily(name, HELP[name], labels=[*LABELS, label] if label else list(LABELS))
        for key, value in values.items():
            family.add_metric([*self.labels, key or ""] if label else self.labels, value, created=self.created)
        return family

    def _tool_parses(self) -> CounterMetricFamily:
        family = CounterMetricFamily("vllm:tool_call_parser_invocations", HELP["vllm:tool_call_parser_invocations"],
                                     labels=["mode", "model_name", "outcome", "request_type"])
        for mode in ("streaming", "non_streaming"):
            for outcome in ("tool_call", "no_tool_call"):
                for request_type in ("chat_completions", "responses", "other"):
                    value = self.metrics.tool_parses.get((mode, outcome), 0) if request_type == "chat_completions" else 0
                    family.add_metric([mode, self.labels[0], outcome, request_type], value, created=self.created)
        return family

    def _engine_config(self) -> GaugeMetricFamily:
        """Duet's info gauge (not vLLM's): the engine's role and budgets, for the gateway to read."""
        limits = self.engine.profile.engine
        info = {"kv_role": KV_ROLES[limits.role], "max_num_batched_tokens": str(limits.max_num_batched_tokens),
                "max_num_seqs": str(limits.max_num_seqs), "role": limits.role}
        family = GaugeMetricFamily(ENGINE_CONFIG, "The engine's role and budgets (Duet's simulator)", labels=sorted(info))
        family.add_metric([info[k] for k in sorted(info)], 1.0)
        return family

    def _cache_config(self) -> GaugeMetricFamily:
        limits = self.engine.profile.engine
        blocks = limits.kv_cache_tokens // limits.block_size
        info = {**CACHE_CONFIG_DEFAULTS, "block_size": str(limits.block_size),
                "effective_attention_block_size": str(limits.block_size), "engine": "0",
                "kv_cache_max_concurrency": f"{limits.kv_cache_tokens / limits.max_model_len:.2f}",
                "kv_cache_memory_bytes": "None", "kv_cache_size_tokens": str(blocks * limits.block_size),
                "num_gpu_blocks": str(blocks)}
        family = GaugeMetricFamily("vllm:cache_config_info", HELP["vllm:cache_config_info"], labels=sorted(info))
        family.add_metric([info[k] for k in sorted(info)], 1.0)
        return family
