"""A trace through the gateway to a replica, received by an in-process OTLP/HTTP collector (a
loopback HTTP server decoding ``ExportTraceServiceRequest`` protobufs, as a collector's
otlphttp receiver does): the request span under the client's trace, admission, the routing
decision, each upstream attempt and the stream, and the replica sees the trace context."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from serving.ports import free_port

from .cluster import wait_until
from .recording_replica import gateway_over_recorders

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_PARENT = "00f067aa0ba902b7"


class Collector:
    """OTLP/HTTP on loopback: every span received, as (name, trace id, span id, parent id, attributes)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        spans = self.spans

        class Receive(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                request = ExportTraceServiceRequest.FromString(self.rfile.read(int(self.headers["content-length"])))
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        spans.extend(_span(s) for s in scope.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1/traces"
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Receive)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()

    def of_trace(self, trace_id: str) -> list[dict[str, Any]]:
        return [s for s in self.spans if s["trace_id"] == trace_id]


def _span(span: Any) -> dict[str, Any]:
    attributes = {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}
    return {"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
            "parent": span.parent_span_id.hex(), "attributes": attributes, "error": span.status.code == 2}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    collector = Collector()

    def export_traces(raw: dict[str, Any]) -> None:
        raw["server"]["otlp_traces_endpoint"] = collector.url

    try:
        with gateway_over_recorders(tmp_path_factory.mktemp("tracing"), edit=export_traces) as (gateway, replicas):
            yield gateway, replicas, collector
    finally:
        collector.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_is_one_trace_from_the_client_through_the_replica(traced, stream):
    gateway, replicas, collector = traced
    trace_id = CLIENT_TRACE[:-2] + ("01" if stream else "00")
    response = httpx.post(gateway.url + "/v1/chat/completions", timeout=10, headers={
        "traceparent": f"00-{trace_id}-{CLIENT_PARENT}-01", "x-duet-ttft-budget-ms": "5000"},
        json={"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": stream})
    assert response.status_code == 200
    request_id = response.headers["x-request-id"]
    wait_until(lambda: any(s["name"] == "chat smollm2" for s in collector.of_trace(trace_id)), 10, "the request span")
    spans = {s["name"]: s for s in collector.of_trace(trace_id)}
    root = spans["chat smollm2"]
    assert root["parent"] == CLIENT_PARENT
    assert root["attributes"]["gen_ai.operation.name"] == "chat"
    assert root["attributes"]["gen_ai.request.model"] == "smollm2"
    assert root["attributes"]["duet.request_id"] == request_id
    assert root["attributes"]["gen_ai.usage.output_tokens"] > 0
    expected = {"duet.admission", "duet.route", "duet.upstream"} | ({"duet.stream"} if stream else set())
    assert expected <= set(spans) and all(spans[name]["parent"] == root["span_id"] for name in expected)
    route = spans["duet.route"]["attributes"]
    assert route["duet.task"] == "chat" and route["duet.variant"] == response.headers["x-duet-variant"]
    assert route["duet.route.reason"] == response.headers["x-duet-route"] and route["duet.predicted_ttft_ms"] > 0
    upstream = spans["duet.upstream"]["attributes"]
    assert upstream["duet.replica"] == response.headers["x-duet-replica"] and upstream["http.response.status_code"] == 200
    # The replica was sent the trace context, naming the gateway's request span as parent.
    [seen] = [r for replica in replicas.values() for r in replica.requests if r.headers.get("x-request-id") == request_id]
    assert seen.headers["traceparent"] == f"00-{trace_id}-{root['span_id']}-01"


def test_a_refused_request_ends_its_span_with_the_error(traced):
    gateway, _, collector = traced
    trace_id = CLIENT_TRACE[:-2] + "02"
    response = httpx.post(gateway.url + "/v1/chat/completions", headers={"traceparent": f"00-{trace_id}-{CLIENT_PARENT}-01",
                                                                         "x-duet-task": "no-such-task"},
                          json={"model": "smollm2", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 400
    # A client's mistake found while planning ends before an exchange exists: no span, nothing leaks.
    assert collector.of_trace(trace_id) == []
