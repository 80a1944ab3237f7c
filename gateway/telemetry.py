"""Duet's Prometheus metrics, all prefixed ``duet_``, in a registry of the gateway's own (no
process-global state). Replica gauges are read from the state store at scrape time."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from gateway.access.ledger import Charge
from gateway.access.receipts.receipt import MICRO, NANO, Receipt
from gateway.domain import Health, Replica, ReplicaState
from gateway.extension_times import ExtensionTimes, ExtensionTimesCollector
from gateway.scaling.desired import VariantNeed

# vLLM's TTFT buckets, so the gateway's and the replicas' histograms line up in one dashboard.
LATENCY_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0
)
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1)


class ReplicaCollector(Collector):
    """duet_replica_up (1 up, 0 down or unknown), duet_replica_in_flight, duet_replica_breaker_open,
    duet_replica_prefix_cache_hit_rate (when the replica reports its prefix cache)."""

    def __init__(
        self, replicas: Callable[[], Iterable[Replica]], snapshot: Callable[[], Mapping[str, ReplicaState]]
    ) -> None:
        self._replicas = replicas
        self._snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        labels = ["model", "variant", "replica"]
        up = GaugeMetricFamily("duet_replica_up", "Replica known to be healthy (1) or not (0).", labels=labels)
        in_flight = GaugeMetricFamily(
            "duet_replica_in_flight", "Requests this gateway has in flight on the replica.", labels=labels
        )
        breaker = GaugeMetricFamily("duet_replica_breaker_open", "Circuit breaker open (1) or not (0).", labels=labels)
        hit_rate = GaugeMetricFamily(
            "duet_replica_prefix_cache_hit_rate",
            "Fraction of prompt tokens the replica's vLLM prefix cache served between its last two scrapes.",
            labels=labels,
        )
        snapshot = self._snapshot()
        for replica in self._replicas():
            state = snapshot.get(replica.id) or ReplicaState(replica.id)
            values = [replica.model, replica.variant, replica.id]
            up.add_metric(values, 1.0 if state.health is Health.UP else 0.0)
            in_flight.add_metric(values, float(state.in_flight))
            breaker.add_metric(values, 0.0 if state.routable or state.health is not Health.UP else 1.0)
            if state.prefix_cache_hit_rate is not None:
                hit_rate.add_metric(values, state.prefix_cache_hit_rate)
        return [up, in_flight, breaker, hit_rate]


MODEL_VARIANT = ["model", "variant"]


class FleetCollector(Collector):
    """duet_desired_replicas and duet_demand_busy_replicas per model and variant, and
    duet_desired_group_replicas per engine group of a variant of several, as the fleet signal
    last computed them (``gateway.autoscaling.gauge``: refreshed before each scrape). Every
    gateway sharing the demand reports the same fleet-wide count: aggregate with max, not sum.
    No series at all while no model is autoscaled.

    The groups' counts are a metric of their own rather than duet_desired_replicas with a
    ``group`` label: one name, one label set (Prometheus' naming advice: a sum or max over a
    metric's labels must mean something), so ``sum by (model)`` of the variant counts stays the
    fleet's size and a selector on model and variant finds exactly one series."""

    def __init__(self, needs: Callable[[], Iterable[tuple[str, VariantNeed]]]) -> None:
        self._needs = needs

    def collect(self) -> Iterable[Metric]:
        desired = GaugeMetricFamily(
            "duet_desired_replicas", "Replicas the variant needs now for the fleet's demand, at the plan's "
            "utilisation, within its floor and max_replicas.", labels=MODEL_VARIANT)
        busy = GaugeMetricFamily(
            "duet_demand_busy_replicas", "Replicas the variant's share of the demand keeps fully busy (before "
            "headroom, floor and rounding).", labels=MODEL_VARIANT)
        groups = GaugeMetricFamily(
            "duet_desired_group_replicas", "Replicas an engine group's Deployment needs now: the variant's "
            "duet_desired_replicas split over its engine groups in their configured proportions.",
            labels=[*MODEL_VARIANT, "group"])
        for model, need in self._needs():
            desired.add_metric([model, need.variant], float(need.desired))
            busy.add_metric([model, need.variant], need.busy_replicas)
            for group, count in need.groups:
                groups.add_metric([model, need.variant, group], float(count))
        if not desired.samples:
            return []
        return [desired, busy, groups] if groups.samples else [desired, busy]


MetricT = TypeVar("MetricT", bound=MetricWrapperBase)


class Series(Generic[MetricT]):
    """A labelled metric's children by label values, each looked up in prometheus_client once.

    ``metric.labels(...)`` validates and joins the values and takes a lock on every call, a
    few microseconds each and several per request; the label sets the hot path uses are few
    (models x variants x tasks x statuses), so their children are kept here. A child is made
    on first use, as ``labels`` would, so /metrics shows the same series as before.
    """

    __slots__ = ("metric", "_children")

    def __init__(self, metric: MetricT) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], MetricT] = {}

    def __call__(self, *values: str) -> MetricT:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "duet_requests", "Requests answered.", ["model", "variant", "task", "status"], registry=r
        )
        self.ttft = Histogram(
            "duet_ttft_seconds", "Time to first token seen by the gateway.", MODEL_VARIANT,
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.e2e = Histogram(
            "duet_e2e_seconds", "End-to-end request latency.", MODEL_VARIANT, buckets=LATENCY_BUCKETS, registry=r
        )
        self.overhead = Histogram(
            "duet_gateway_overhead_seconds", "Time spent in the gateway itself before forwarding.",
            buckets=OVERHEAD_BUCKETS, registry=r,
        )
        self.decisions = Counter(
            "duet_routing_decisions", "Routing decisions by reason.", ["model", "variant", "reason"], registry=r
        )
        self.fallbacks = Counter(
            "duet_fallbacks", "Requests served by a replica other than the first ranked.", ["model"], registry=r
        )
        self.escalations = Counter(
            "duet_escalations", "Fast answers that broke the request's contract (tool call, JSON schema), by task, "
            "reason and what was done: escalated to the standard, or kept (no budget left, no standard, it failed).",
            ["model", "task", "reason", "action"], registry=r,
        )
        self.task_sources = Counter(
            "duet_task_sources", "Requests by task type and where it came from: header, rule, key, detector, abstained "
            "(the detector was unsure: every task plausible) or default.", ["model", "task", "source"], registry=r,
        )
        self.slo = Counter("duet_slo", "Requests by whether they met their latency budget.", ["task", "result"], registry=r)
        self.cost = Counter("duet_cost_usd", "Cost of served tokens at the variant's price.", MODEL_VARIANT, registry=r)
        self.tokens = Counter("duet_tokens", "Tokens served.", ["model", "variant", "kind"], registry=r)
        self.stream_errors = Counter("duet_stream_errors", "Streams ended with an error event.", MODEL_VARIANT, registry=r)
        # The savings receipt (gateway/access/receipts/receipt.py): each request's GPU time and GPU-dollars,
        # and what standard would have used for it, by the variant that served it.
        self.receipt_gpu_seconds = Counter(
            "duet_receipt_gpu_seconds", "GPU-seconds requests used on the variant that served them (step model).",
            MODEL_VARIANT, registry=r)
        self.receipt_standard_gpu_seconds = Counter(
            "duet_receipt_standard_gpu_seconds", "GPU-seconds the same requests would have used on the standard "
            "variant (the counterfactual of a standard-only deployment).", MODEL_VARIANT, registry=r)
        self.receipt_gpu_usd = Counter(
            "duet_receipt_gpu_usd", "GPU-dollars requests used on the variant that served them.", MODEL_VARIANT, registry=r)
        self.receipt_standard_gpu_usd = Counter(
            "duet_receipt_standard_gpu_usd", "GPU-dollars the same requests would have used on the standard variant.",
            MODEL_VARIANT, registry=r)
        self.receipt_requests = Counter(
            "duet_receipt_requests", "Requests answered, by whether a high-speed variant served them.",
            ["model", "served"], registry=r)
        # API keys, quotas and the shared store (gateway/access, gateway/state/redis_*).
        self.key_requests = Counter(
            "duet_key_requests", "Requests answered per API key.", ["key", "model", "variant", "task"], registry=r
        )
        self.key_tokens = Counter(
            "duet_key_tokens", "Tokens served per API key.", ["key", "model", "variant", "kind"], registry=r
        )
        self.key_cost = Counter("duet_key_cost_usd", "Cost charged per API key.", ["key", "model", "variant"], registry=r)
        self.auth_failures = Counter("duet_auth_failures", "Requests refused for their API key.", ["reason"], registry=r)
        self.rate_limited = Counter("duet_rate_limited", "Requests refused by a key's limit.", ["limit"], registry=r)
        self.quota_unavailable = Counter(
            "duet_quota_unavailable", "Requests whose quotas could not be checked, by the failure mode applied.",
            ["decision"], registry=r,
        )
        self.redis_errors = Counter("duet_redis_errors", "Redis failures and dropped writes.", ["kind"], registry=r)
        self.queue_wait = Histogram(
            "duet_queue_wait_seconds", "How long requests that found every replica full waited in the waiting room.",
            buckets=LATENCY_BUCKETS, registry=r,
        )
        # Each hook subscriber's and routing plugin's time (the director and the router observe it).
        self.extension_times = ExtensionTimes()
        r.register(ExtensionTimesCollector(self.extension_times))
        # The children every answered request updates, cached (see Series).
        self.requests_by = Series(self.requests)
        self.decisions_by = Series(self.decisions)
        self.ttft_by = Series(self.ttft)
        self.e2e_by = Series(self.e2e)
        self.fallbacks_by = Series(self.fallbacks)
        self.slo_by = Series(self.slo)
        self.task_sources_by = Series(self.task_sources)
        self.cost_by = Series(self.cost)
        self.tokens_by = Series(self.tokens)
        self.stream_errors_by = Series(self.stream_errors)
        self.key_requests_by = Series(self.key_requests)
        self.key_tokens_by = Series(self.key_tokens)
        self.key_cost_by = Series(self.key_cost)
        self.receipt_gpu_seconds_by = Series(self.receipt_gpu_seconds)
        self.receipt_standard_gpu_seconds_by = Series(self.receipt_standard_gpu_seconds)
        self.receipt_gpu_usd_by = Series(self.receipt_gpu_usd)
        self.receipt_standard_gpu_usd_by = Series(self.receipt_standard_gpu_usd)
        self.receipt_requests_by = Series(self.receipt_requests)

    def key_usage(self, key: str, charge: Charge) -> None:
        """Count one settled request of the API key labelled ``key`` (its opaque id, or its name
        when the operator opted in with ``access.metrics_key_names``)."""
        model, variant = charge.model, charge.variant
        self.key_requests_by(key, model, variant, charge.task).inc()
        self.key_tokens_by(key, model, variant, "input").inc(charge.input_tokens)
        self.key_tokens_by(key, model, variant, "output").inc(charge.output_tokens)
        self.key_cost_by(key, model, variant).inc(charge.cost_usd)

    def receipt(self, model: str, variant: str, receipt: Receipt) -> None:
        """Count one request's savings receipt."""
        self.receipt_gpu_seconds_by(model, variant).inc(receipt.gpu_us / MICRO)
        self.receipt_standard_gpu_seconds_by(model, variant).inc(receipt.standard_gpu_us / MICRO)
        self.receipt_gpu_usd_by(model, variant).inc(receipt.nano_usd / NANO)
        self.receipt_standard_gpu_usd_by(model, variant).inc(receipt.standard_nano_usd / NANO)
        self.receipt_requests_by(model, "fast" if receipt.fast else "standard").inc()

    def watch_replicas(
        self, replicas: Callable[[], Iterable[Replica]], snapshot: Callable[[], Mapping[str, ReplicaState]]
    ) -> None:
        self.registry.register(ReplicaCollector(replicas, snapshot))

    def watch_waiting(self, depth: Callable[[], int]) -> None:
        """duet_waiting_requests: the waiting room's depth, read at scrape time."""
        gauge = Gauge("duet_waiting_requests", "Requests waiting in the waiting room for a slot.", registry=self.registry)
        gauge.set_function(lambda: float(depth()))

    def watch_fleet(self, needs: Callable[[], Iterable[tuple[str, VariantNeed]]]) -> None:
        """duet_desired_replicas, duet_demand_busy_replicas and duet_desired_group_replicas from
        ``needs`` (model, variant need)."""
        self.registry.register(FleetCollector(needs))

    def watch_redis(self, up: Callable[[], bool]) -> None:
        """duet_redis_up: 1 while the shared store answers (0: routing on local state, quotas
        failing open or closed as state.quota_failure says), read at scrape time."""
        gauge = Gauge("duet_redis_up", "The shared store (Redis) answers (1) or not (0).", registry=self.registry)
        gauge.set_function(lambda: 1.0 if up() else 0.0)

    def render(self) -> bytes:
        return generate_latest(self.registry)
