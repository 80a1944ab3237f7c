"""POST /v1/chat/completions and /v1/completions, served as raw ASGI (see ``gateway.api.fastpath``):
validate, classify, route, forward, relay."""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.access.guard import Grant
from gateway.admission import PRIORITY_RANK, Action, assess, deadline_s
from gateway.admission_queue import RECHECK_S
from gateway.api.body import ChatBody, CompletionBody, parse_body
from gateway.decide import Plan, decode_claim, plan_request, refuse
from gateway.domain import Outcome, Replica, ReplicaState
from gateway.errors import BodyTooLarge, RateLimited, RequestError
from gateway.proxy.forward import Answer
from gateway.proxy.relay import StreamOptions, finish_body, relay_stream
from gateway.proxy.sse import DONE, ModelRewrite, error_event
from gateway.runtime import Gateway
from gateway.state.observations import with_prediction
from gateway.telemetry import Telemetry

access_log = logging.getLogger("duet.access")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Endpoint:
    path: str
    schema: type[ChatBody] | type[CompletionBody]


class RequestIds:
    """New request ids: 24 hex digits, a random prefix per process and a counter. Unique like
    random ids, without a getrandom() syscall per request."""

    __slots__ = ("_prefix", "_counter")

    def __init__(self) -> None:
        self._prefix = os.urandom(6).hex()
        self._counter = itertools.count()

    def new(self) -> str:
        return f"{self._prefix}{next(self._counter) & 0xFFFFFFFFFFFF:012x}"


@dataclass(slots=True)
class Exchange:
    """One proxied request as the ASGI layer sees it. ``started``: the response head was sent."""

    ids: RequestIds
    started: bool = False


CHAT = Endpoint("/v1/chat/completions", ChatBody)
COMPLETIONS = Endpoint("/v1/completions", CompletionBody)


async def read_body(receive: Receive, headers: dict[str, str], limit: int) -> bytes:
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"The request body is larger than the limit of {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise asyncio.CancelledError("client disconnected while sending its body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"The request body is larger than the limit of {limit} bytes.")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


@functools.lru_cache(maxsize=256)
def model_rewrite(served_name: str, client_name: str) -> ModelRewrite:
    """The rewrite between a served name and the name a client used, built once per pair (two
    JSON encodings each time otherwise). Bounded: client names are the client's to choose."""
    return ModelRewrite.between(served_name, client_name)


def request_headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


# A client's x-request-id is echoed and sent to the replica: only a plain token is taken as is.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:=+/-]{1,128}")


def request_id_of(headers: dict[str, str], ids: RequestIds) -> str:
    """The client's x-request-id when it is a plain token of at most 128 characters, else a new one."""
    claimed = headers.get("x-request-id")
    if claimed is not None and _REQUEST_ID.fullmatch(claimed):
        return claimed
    return ids.new()


async def proxy_completion(
    gateway: Gateway, endpoint: Endpoint, scope: Scope, receive: Receive, send: Send, exchange: Exchange
) -> None:
    received = time.perf_counter()
    headers = request_headers(scope)
    raw = await read_body(receive, headers, gateway.current.config.server.max_body_bytes)
    data, body = parse_body(raw, endpoint.schema)
    grant = await gateway.access.admit(headers, body.model)
    try:
        await _proxy_admitted(gateway, endpoint, grant, data, body, headers, received, receive, send, exchange)
    finally:
        gateway.access.release(grant)  # the key's concurrency slot, however the request ended


async def _proxy_admitted(
    gateway: Gateway, endpoint: Endpoint, grant: Grant, data: dict[str, Any], body: ChatBody | CompletionBody,
    headers: dict[str, str], received: float, receive: Receive, send: Send, exchange: Exchange,
) -> None:
    current = gateway.current
    grant.cap_priority(headers)
    snapshot = gateway.store.snapshot()
    visible = grant.visible(snapshot, current.config)
    plan = plan_request(current.config, current.counters, visible, body, headers, backlog=gateway.backlog.tokens,
                        slack=gateway.decodes.least_slack)
    try:
        plan = await admit(gateway, plan, grant, body, headers, snapshot)
    except RequestError as refusal:
        gateway.telemetry.requests_by(plan.profile.model, "none", plan.profile.task, str(refusal.status)).inc()
        raise
    request_id = request_id_of(headers, exchange.ids)
    client_wants_usage = bool((body.stream_options or {}).get("include_usage"))
    if body.stream:
        data["stream_options"] = {**(body.stream_options or {}), "include_usage": True}
    variants = plan.target.model.variants
    encoded: dict[str, bytes] = {}

    def body_for(replica: Replica) -> bytes:
        served = variants[replica.variant].served_model_name
        if served not in encoded:
            data["model"] = served
            encoded[served] = orjson.dumps(data)
        return encoded[served]

    upstream_headers = f"x-request-id: {request_id}\r\nx-duet-task: {plan.profile.task}\r\n".encode("latin-1")
    overhead_s = time.perf_counter() - received
    gateway.telemetry.overhead.observe(overhead_s)
    claim = decode_claim(plan.target.model, plan.profile, plan.decision)
    try:
        answer = await gateway.forwarder.send(plan.decision.ranked, endpoint.path, body_for, upstream_headers,
                                              bool(body.stream), plan.profile.input_tokens, claim)
    except RequestError as exc:
        gateway.telemetry.requests_by(plan.profile.model, "none", plan.profile.task, str(exc.status)).inc()
        raise
    try:
        await _respond(gateway, plan, grant, body, answer, request_id, overhead_s, client_wants_usage, receive, send, exchange)
    finally:
        _end_decode(gateway, answer)  # whatever ended the request; a second end is a no-op


def _end_decode(gateway: Gateway, answer: Answer) -> float:
    """The answer's request leaves the decode ledger; returns the stall later prompts charged to it."""
    if answer.decode_ticket is None:
        return 0.0
    return gateway.decodes.done(answer.replica.id, answer.decode_ticket)


async def _respond(
    gateway: Gateway, plan: Plan, grant: Grant, body: ChatBody | CompletionBody, answer: Answer, request_id: str,
    overhead_s: float, client_wants_usage: bool, receive: Receive, send: Send, exchange: Exchange,
) -> None:
    variants = plan.target.model.variants
    variant = variants[answer.replica.variant]
    rewrite = model_rewrite(variant.served_model_name, body.model)
    route = plan.decision.reason if answer.failed_attempts == 0 else f"{plan.decision.reason};fallback"
    response_headers = [
        (b"x-duet-variant", variant.name.encode()),
        (b"x-duet-replica", answer.replica.id.encode()),
        (b"x-duet-route", route.encode()),
        (b"x-duet-overhead-ms", f"{overhead_s * 1e3:.3f}".encode()),
        (b"x-request-id", request_id.encode("latin-1")),
    ]

    prediction = plan.decision.predictions.get(answer.replica.id)

    async def on_done(outcome: Outcome) -> None:
        outcome = with_prediction(outcome, prediction, _end_decode(gateway, answer))
        await gateway.store.finish(outcome)
        gateway.admission_queue.wake()
        await gateway.access.settle(grant, plan.profile.model, variant.name, plan.profile.task, outcome, variant.price)
        record(gateway.telemetry, plan, variant.name, outcome, answer.failed_attempts, request_id)

    if body.stream and answer.status == 200:
        options = StreamOptions(rewrite, strip_usage=not client_wants_usage, input_tokens_estimate=plan.profile.input_tokens)
        exchange.started = True
        await _send_stream(answer, options, on_done, response_headers, receive, send)
        return
    payload, outcome = finish_body(answer, rewrite, plan.profile.input_tokens)
    content_type = answer.response.header(b"content-type") or b"application/json"
    response_headers += [(b"content-type", content_type), (b"content-length", str(len(payload)).encode())]
    exchange.started = True
    await send({"type": "http.response.start", "status": answer.status, "headers": response_headers})
    await send({"type": "http.response.body", "body": payload})
    await on_done(outcome)


async def admit(
    gateway: Gateway, plan: Plan, grant: Grant, body: ChatBody | CompletionBody, headers: dict[str, str],
    snapshot: Mapping[str, ReplicaState] | None = None,
) -> Plan:
    """The plan to forward now, after waiting in the gateway's queue if every replica is full.
    Raises the client's error when there is no candidate, or a 429 when the request is shed or its
    deadline passes while it waits (it is re-planned each time a slot may have freed).
    ``snapshot``: the store's snapshot ``plan`` was made from, if taken since the last await."""
    started = time.monotonic()
    wait_limit = deadline_s(plan.profile, gateway.current.config.server.max_queue_wait_s)
    while True:
        if not plan.decision.ranked:
            raise refuse(plan)
        verdict = assess(plan.profile, plan.decision, snapshot or gateway.store.snapshot(), gateway.admission_limits())
        snapshot = None
        if verdict.action is Action.FORWARD:
            return plan
        if verdict.action is Action.SHED:
            raise RateLimited(f"Request shed ({verdict.reason}) for priority '{plan.profile.priority.value}'.",
                              retry_after_s=1.0)
        remaining = wait_limit - (time.monotonic() - started)
        if remaining <= 0:
            raise RateLimited(f"No replica could start this request within its deadline ({wait_limit:.1f} s); retry later.",
                              retry_after_s=max(1.0, wait_limit))
        await gateway.admission_queue.wait(PRIORITY_RANK[plan.profile.priority], min(remaining, RECHECK_S))
        current = gateway.current
        snapshot = grant.visible(gateway.store.snapshot(), current.config)
        plan = plan_request(current.config, current.counters, snapshot, body, headers, backlog=gateway.backlog.tokens,
                            slack=gateway.decodes.least_slack)


async def _send_stream(
    answer: Answer,
    options: StreamOptions,
    on_done: Callable[[Outcome], Awaitable[None]],
    headers: list[tuple[bytes, bytes]],
    receive: Receive,
    send: Send,
) -> None:
    """Relays the stream. A watcher on ``receive`` learns of a client disconnect at once (uvicorn's
    ``send`` drops bytes silently after one) and closes the upstream connection, so the replica
    stops generating even if it is between tokens. A stream still open when the server's drain
    timeout ends it (uvicorn cancels the task) ends with an error event and ``[DONE]``, as when a
    replica dies mid-stream, so the client knows it was cut."""
    finished = False

    def on_disconnect(_: object) -> None:
        if not finished:
            answer.client_gone = True
            answer.response.close()

    # The loop is passed: looking it up is a getpid() syscall on Python 3.11.
    watcher = asyncio.ensure_future(receive(), loop=answer.response.loop)
    watcher.add_done_callback(on_disconnect)
    headers = [*headers, (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]

    async def write(piece: bytes, last: bool) -> None:
        # The piece holding [DONE] ends the response (more_body=False): its chunked terminator
        # goes out in the same write instead of an extra empty message.
        nonlocal finished
        finished = last
        await send({"type": "http.response.body", "body": piece, "more_body": not last})

    try:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await relay_stream(answer, options, write, on_done)
        if not finished:
            finished = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    except asyncio.CancelledError:
        if not finished and not answer.client_gone:
            cut = error_event("The gateway is shutting down; the stream was cut at its drain timeout.",
                              "service_unavailable", "gateway_shutting_down") + DONE
            await send({"type": "http.response.body", "body": cut, "more_body": False})
        raise
    finally:
        finished = True
        watcher.cancel()


def record(telemetry: Telemetry, plan: Plan, variant: str, outcome: Outcome, fallbacks: int, request_id: str) -> None:
    """Counts one finished request in metrics and writes its access-log line (no prompt text)."""
    profile = plan.profile
    model = profile.model
    telemetry.requests_by(model, variant, profile.task, str(outcome.status)).inc()
    telemetry.decisions_by(model, variant, plan.decision.reason).inc()
    telemetry.e2e_by(model, variant).observe(outcome.duration_s)
    if fallbacks:
        telemetry.fallbacks_by(model).inc()
    if outcome.ttft_s is not None:
        telemetry.ttft_by(model, variant).observe(outcome.ttft_s)
    if outcome.status in (502, 504) and outcome.ttft_s is not None:
        telemetry.stream_errors_by(model, variant).inc()
    if outcome.status < 400:
        price = plan.target.model.variants[variant].price
        telemetry.cost_by(model, variant).inc(price.cost_usd(outcome.input_tokens, outcome.output_tokens))
        telemetry.tokens_by(model, variant, "input").inc(outcome.input_tokens)
        telemetry.tokens_by(model, variant, "output").inc(outcome.output_tokens)
        telemetry.slo_by(profile.task, "met" if met_budget(plan, outcome) else "missed").inc()
    if access_log.isEnabledFor(logging.INFO):
        access_log.info("request", extra={"fields": _access_fields(plan, variant, outcome, request_id)})


def met_budget(plan: Plan, outcome: Outcome) -> bool:
    profile = plan.profile
    if profile.ttft_budget_ms is not None and outcome.ttft_s is not None and outcome.ttft_s * 1e3 > profile.ttft_budget_ms:
        return False
    if profile.latency_budget_ms is not None and outcome.duration_s * 1e3 > profile.latency_budget_ms:
        return False
    if profile.tpot_budget_ms is not None and outcome.ttft_s is not None and outcome.output_tokens > 1:
        tpot_ms = (outcome.duration_s - outcome.ttft_s) / (outcome.output_tokens - 1) * 1e3
        if tpot_ms > profile.tpot_budget_ms:
            return False
    return True


def _access_fields(plan: Plan, variant: str, outcome: Outcome, request_id: str) -> dict[str, Any]:
    return {
        "request_id": request_id, "model": plan.profile.model, "variant": variant, "replica": outcome.replica_id,
        "task": plan.profile.task, "route": plan.decision.reason, "status": outcome.status,
        "ttft_ms": None if outcome.ttft_s is None else round(outcome.ttft_s * 1e3, 2),
        "duration_ms": round(outcome.duration_s * 1e3, 2),
        "input_tokens": outcome.input_tokens, "output_tokens": outcome.output_tokens,
    }
