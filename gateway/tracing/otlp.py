"""OpenTelemetry spans for each request, as a lifecycle subscriber (``gateway.flow.hooks``), and
the W3C trace context sent to the replica with it.

    <operation> <model>      SERVER, arrival -> the client's answer ended (GenAI conventions:
    │                        gen_ai.operation.name, gen_ai.request.model, gen_ai.usage.*)
    ├── duet.admission       arrival -> dispatch (planning, and any wait for a slot)
    ├── duet.route           the decision dispatched on: task, variant, reason, predicted TTFT
    ├── duet.upstream        CLIENT, one per attempt (fallbacks included): replica, status
    └── duet.stream          first token -> the stream's end (streams only)

The replica gets ``traceparent``/``tracestate`` naming the request span, so its own spans (vLLM
exports OTLP too) join the client's trace. Off by default (``server.otlp_traces_endpoint``):
then the gateway holds ``gateway.tracing.off.NO_TRACING`` instead. The replay never
subscribes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.endpoints import ChatBody, EmbeddingsBody, RequestBody
from gateway.errors import RequestError
from gateway.flow.exchange import Attempt, Exchange
from gateway.flow.hooks import Hooks
from gateway.outcome import Outcome

_PROPAGATOR = TraceContextTextMapPropagator()


def _epoch_ns(perf_s: float) -> int:
    """A ``perf_counter`` reading (the HTTP director's clock) as nanoseconds since the epoch."""
    return time.time_ns() - int((time.perf_counter() - perf_s) * 1e9)


def operation_of(body: RequestBody) -> str:
    """gen_ai.operation.name: chat (chat, Messages, Responses), text_completion or embeddings."""
    if isinstance(body, ChatBody):
        return "chat"
    return "embeddings" if isinstance(body, EmbeddingsBody) else "text_completion"


@dataclass(slots=True)
class RequestTrace:
    """What the subscriber keeps on one exchange (``Exchange.trace``)."""

    span: Span
    context: Any
    attempt: Span | None = None
    stream: Span | None = None
    attempts: int = field(default=0)


class OtelTracing:
    """Spans through ``provider`` (an SDK TracerProvider with its exporter)."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("duet.gateway")

    @classmethod
    def exporting(cls, exporter: SpanExporter, service_name: str = "duet") -> OtelTracing:
        provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
        return cls(provider)

    @classmethod
    def otlp(cls, endpoint: str, service_name: str = "duet") -> OtelTracing:
        """Exporting OTLP over HTTP (protobuf) to ``endpoint`` (a collector's /v1/traces URL)."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return cls.exporting(OTLPSpanExporter(endpoint=endpoint), service_name)

    def subscribe(self, hooks: Hooks) -> None:
        hooks.dispatched.append(self.dispatched)
        hooks.first_token.append(self.first_token)
        hooks.attempt_ended.append(self.attempt_ended)
        hooks.done.append(self.done)
        hooks.refused.append(self.refused)

    def shutdown(self) -> None:
        self._provider.shutdown()

    def upstream_headers(self, exchange: Exchange) -> bytes:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=self._trace(exchange).context)
        return "".join(f"{name}: {value}\r\n" for name, value in carrier.items()).encode("latin-1")

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        request = self._trace(exchange)
        if request.attempts == 0:
            self._admission_and_route(exchange, request, attempt)
        request.attempts += 1
        request.attempt = self._tracer.start_span("duet.upstream", context=request.context, kind=SpanKind.CLIENT, attributes={
            "duet.replica": attempt.replica.id, "duet.variant": attempt.variant.name, "url.full": attempt.replica.url,
            "duet.attempt": request.attempts, "gen_ai.request.model": attempt.variant.served_model_name})

    def first_token(self, exchange: Exchange, attempt: Attempt) -> None:
        request = self._trace(exchange)
        if exchange.inbound.body.stream and request.stream is None:
            request.stream = self._tracer.start_span("duet.stream", context=request.context)

    def attempt_ended(self, exchange: Exchange, attempt: Attempt, outcome: Outcome) -> None:
        request = self._trace(exchange)
        if request.attempt is not None:
            request.attempt.set_attribute("http.response.status_code", outcome.status)
            if not outcome.ok:
                request.attempt.set_status(Status(StatusCode.ERROR, f"status {outcome.status}"))
            request.attempt.end()
            request.attempt = None

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        request = self._trace(exchange)
        if request.stream is not None:
            request.stream.set_attribute("gen_ai.usage.output_tokens", outcome.output_tokens)
            request.stream.end()
        span = request.span
        span.set_attributes({"gen_ai.usage.input_tokens": outcome.input_tokens,
                             "gen_ai.usage.output_tokens": outcome.output_tokens,
                             "http.response.status_code": outcome.status})
        if outcome.ttft_s is not None:
            span.set_attribute("duet.ttft_ms", round(outcome.ttft_s * 1e3, 3))
        if not outcome.ok:
            span.set_status(Status(StatusCode.ERROR, f"status {outcome.status}"))
        span.end()

    def refused(self, exchange: Exchange | None, error: RequestError) -> None:
        if exchange is None:
            return
        request = self._trace(exchange)
        if request.attempts == 0:
            admission = self._tracer.start_span("duet.admission", context=request.context,
                                                start_time=_epoch_ns(exchange.received_at))
            admission.set_status(Status(StatusCode.ERROR, type(error).__name__))
            admission.end()
        request.span.set_attributes({"http.response.status_code": error.status, "error.type": type(error).__name__})
        request.span.set_status(Status(StatusCode.ERROR, str(error)))
        request.span.end()

    def _trace(self, exchange: Exchange) -> RequestTrace:
        """The request's span, started at its arrival under the client's trace context, if any."""
        if isinstance(exchange.trace, RequestTrace):
            return exchange.trace
        body, profile = exchange.inbound.body, exchange.plan.profile
        operation = operation_of(body)
        span = self._tracer.start_span(
            f"{operation} {body.model}", context=_PROPAGATOR.extract(exchange.inbound.headers), kind=SpanKind.SERVER,
            start_time=_epoch_ns(exchange.received_at), attributes={
                "gen_ai.operation.name": operation, "gen_ai.request.model": body.model,
                "duet.request_id": exchange.request_id, "duet.task": profile.task,
                **({"gen_ai.request.max_tokens": profile.max_output_tokens} if profile.max_output_tokens else {}),
            })
        exchange.trace = RequestTrace(span, trace.set_span_in_context(span))
        return exchange.trace

    def _admission_and_route(self, exchange: Exchange, request: RequestTrace, attempt: Attempt) -> None:
        plan, profile = exchange.plan, exchange.plan.profile
        dispatched = _epoch_ns(exchange.dispatched_at if exchange.dispatched_at is not None else time.perf_counter())
        admission = self._tracer.start_span("duet.admission", context=request.context,
                                            start_time=_epoch_ns(exchange.received_at),
                                            attributes={"duet.priority": profile.priority.value})
        admission.end(end_time=dispatched)
        attributes: dict[str, Any] = {
            "duet.task": profile.task, "duet.task_source": profile.task_source, "duet.variant": attempt.variant.name,
            "duet.route.reason": plan.decision.reason, "duet.meets_budget": plan.decision.meets_budget,
            "duet.input_tokens": profile.input_tokens, "duet.expected_output_tokens": profile.expected_output_tokens,
            "gen_ai.request.model": profile.model,
        }
        if attempt.prediction is not None:
            attributes["duet.predicted_ttft_ms"] = round(attempt.prediction.ttft_ms, 3)
            attributes["duet.predicted_e2e_ms"] = round(attempt.prediction.e2e_ms, 3)
        self._tracer.start_span("duet.route", context=request.context, start_time=dispatched,
                                attributes=attributes).end(end_time=dispatched)
