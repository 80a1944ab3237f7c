"""The request as every attempt sends it upstream (``gateway.proxy.forward.UpstreamRequest``)."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.domain import Replica
from gateway.flow.affinity import response_id
from gateway.flow.body import ResponsesBody
from gateway.flow.escalation import buffered_stream
from gateway.flow.exchange import Exchange
from gateway.proxy.forward import UpstreamRequest


def upstream_request(exchange: Exchange, path: str, data: dict[str, Any], *, stream_usage: bool = True,
                     trace_headers: bytes = b"") -> UpstreamRequest:
    """What each attempt sends: the client's body with the replica's served model name (encoded
    once per variant), usage asked for on OpenAI streams (``stream_usage``: the gateway counts
    tokens from it; the Messages and Responses streams always carry it), and ``trace_headers``
    (the trace context, ``gateway.flow.tracing``)."""
    body = exchange.inbound.body
    if isinstance(body, ResponsesBody) and body.request_id is None:
        data["request_id"] = response_id(exchange)  # known before it is answered: its home is remembered
    stream = bool(body.stream)
    if stream and buffered_stream(exchange):  # checked whole first, then streamed (gateway.flow.escalation)
        data.pop("stream_options", None)
        data["stream"] = stream = False
    if stream and stream_usage:
        data["stream_options"] = {**(body.stream_options or {}), "include_usage": True}
    model = exchange.plan.target.model
    encoded: dict[str, bytes] = {}

    def body_for(replica: Replica) -> bytes:
        served = model.variant_of(replica).served_model_name
        if served not in encoded:
            data["model"] = served
            encoded[served] = orjson.dumps(data)
        return encoded[served]

    ids = f"x-request-id: {exchange.request_id}\r\nx-duet-task: {exchange.plan.profile.task}\r\n".encode("latin-1")
    headers = ids + trace_headers
    return UpstreamRequest(path, body_for, headers, stream)
