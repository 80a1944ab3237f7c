"""/metrics with vLLM's names, labels (``model_name``, ``engine``) and histogram buckets.

Gauges and counters are read from the engine at scrape time; histograms are observed from
engine events as they happen. Times are the model's (virtual) seconds: with ``--time-scale``
the numbers stay those of the simulated hardware.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from serving.sim.engine import Engine
from serving.sim.events import Event, Finished, TokensOut

LABELS = ("model_name", "engine")

# Bucket boundaries as vLLM's PrometheusStatLogger defines them (vllm/v1/metrics/loggers.py).
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
               20.0, 40.0, 80.0)
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                           60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
FINISH_REASONS = ("stop", "length", "abort", "error")


def token_buckets(max_value: int) -> tuple[int, ...]:
    """vLLM's 1-2-5 buckets up to ``max_value`` (for token-count histograms)."""
    out, exponent = [], 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(out)
            out.append(value)
        exponent += 1


class SimMetrics:
    """One replica's Prometheus registry (not the global one)."""

    def __init__(self, engine: Engine, model_name: str) -> None:
        self.engine = engine
        self.labels = (model_name, "0")
        self.registry = CollectorRegistry(auto_describe=False)
        self.finished: dict[str, int] = {}
        self.registry.register(_EngineCollector(engine, self.labels, self.finished))
        self._last_token_time: dict[str, float] = {}
        max_len = engine.profile.engine.max_model_len
        hist = self._histogram
        self.ttft = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS)
        self.itl = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS)
        self.tpot = hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS)
        self.e2e = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", REQUEST_LATENCY_BUCKETS)
        self.queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", REQUEST_LATENCY_BUCKETS)
        self.inference = hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", REQUEST_LATENCY_BUCKETS)
        self.prefill = hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", REQUEST_LATENCY_BUCKETS)
        self.decode = hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", REQUEST_LATENCY_BUCKETS)
        self.prompt_len = hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", token_buckets(max_len))
        self.gen_len = hist("vllm:request_generation_tokens", "Number of generation tokens processed.", token_buckets(max_len))
        self.max_tokens = hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", token_buckets(max_len))
        self.n_param = hist("vllm:request_params_n", "Histogram of the n request parameter.", (1, 2, 5, 10, 20))

    def _histogram(self, name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
        metric = Histogram(name, doc, LABELS, buckets=buckets, registry=self.registry)
        return metric.labels(*self.labels)

    def observe(self, events: list[Event]) -> None:
        """Record engine events in the histograms."""
        last = self._last_token_time
        for event in events:
            if isinstance(event, TokensOut):
                if event.first:
                    last[event.request_id] = event.time
                else:
                    self.itl.observe(event.time - last.get(event.request_id, event.time))
                    last[event.request_id] = event.time
            elif isinstance(event, Finished):
                self._observe_finished(event)
                last.pop(event.request_id, None)

    def observe_params(self, max_tokens: int, n: int) -> None:
        """Record a request's sampling parameters, as vLLM does on arrival."""
        self.max_tokens.observe(max_tokens)
        self.n_param.observe(n)

    def _observe_finished(self, event: Finished) -> None:
        self.finished[event.reason] = self.finished.get(event.reason, 0) + 1
        if event.ttft_s is None:
            return  # aborted before its first token: vLLM records no latencies
        self.ttft.observe(event.ttft_s)
        self.e2e.observe(event.e2e_s)
        self.queue.observe(event.queued_s)
        self.prefill.observe(event.ttft_s - event.queued_s)
        decode_s = event.e2e_s - event.ttft_s
        self.decode.observe(decode_s)
        self.inference.observe(event.e2e_s - event.queued_s)
        if event.output_tokens > 1:
            self.tpot.observe(decode_s / (event.output_tokens - 1))
        self.prompt_len.observe(event.prompt_tokens)
        self.gen_len.observe(event.output_tokens)

    def render(self) -> bytes:
        """The /metrics text."""
        return generate_latest(self.registry)


class _EngineCollector:
    """Reads the engine's gauges and counters at scrape time."""

    def __init__(self, engine: Engine, labels: tuple[str, str], finished: dict[str, int]) -> None:
        self.engine = engine
        self.labels = list(labels)
        self.finished = finished  # finish reason -> requests, kept by SimMetrics

    def collect(self) -> Iterator[Metric]:
        engine, labels = self.engine, self.labels
        snap, counts = engine.snapshot(), engine.counters
        yield self._gauge("vllm:num_requests_running", "Number of requests in model execution batches.", snap.running)
        yield self._gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", snap.waiting)
        yield self._gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", snap.kv_cache_usage)
        counters = [
            ("vllm:num_preemptions", "Cumulative number of preemption from the engine.", counts.preemptions),
            ("vllm:prompt_tokens", "Number of prefill tokens processed.", counts.prompt_tokens),
            ("vllm:generation_tokens", "Number of generation tokens processed.", counts.generation_tokens),
            ("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", counts.prefix_cache_queries),
            ("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", counts.prefix_cache_hits),
        ]
        if engine.profile.speculation is not None:
            counters += [
                ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", counts.spec_drafts),
                ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", counts.spec_draft_tokens),
                ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", counts.spec_accepted_tokens),
            ]
        for name, doc, value in counters:
            family = CounterMetricFamily(name, doc, labels=list(LABELS))
            family.add_metric(labels, value)
            yield family
        success = CounterMetricFamily("vllm:request_success", "Count of successfully processed requests.",
                                      labels=[*LABELS, "finished_reason"])
        for reason in FINISH_REASONS:
            success.add_metric([*labels, reason], self.finished.get(reason, 0))
        yield success

    def _gauge(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, doc, labels=list(LABELS))
        family.add_metric(self.labels, value)
        return family
