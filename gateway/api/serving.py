"""Serving the proxied endpoints as raw ASGI (see ``gateway.api.fastpath``; the role of vLLM's
``serving_*`` modules), one handler for every API ``gateway.endpoints`` registers: read and
parse the body as the endpoint says, hand the request to the director (``gateway.flow``), and
write the answer or the stream back, ended as the endpoint's framing ends it. Everything
between arrival and outcome is the director's."""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.access.ceiling import ceiling_of
from gateway.api.asgi import Message, Receive, Scope, Send
from gateway.api.gate import key_of
from gateway.endpoints import Endpoint, RequestBody
from gateway.errors import RequestError
from gateway.flow import Exchange, Inbound, upstream_request
from gateway.flow.escalation import escalation_headers
from gateway.flow.exchange import AnswerSink
from gateway.outcome import Outcome
from gateway.proxy.disaggregated import SPLIT_PATHS
from gateway.proxy.forward import Answer
from gateway.proxy.relay import StreamOptions, finish_body, relay_stream
from gateway.proxy.sse import ModelRewrite
from gateway.proxy.whole_stream import completion_events
from gateway.runtime import Gateway
from gateway.sessions import session_headers

SSE = b"text/event-stream; charset=utf-8"


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
class Reply:
    """One proxied request's response as the ASGI layer sees it: the endpoint it answers, new
    request ids, and ``started``: its head was sent."""

    ids: RequestIds
    endpoint: Endpoint[RequestBody]
    started: bool = False


async def read_body(receive: Receive) -> bytes:
    """The whole body (its size already bounded by the gate, ``gateway.api.gate``)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise asyncio.CancelledError("client disconnected while sending its body")
        chunks.append(message.get("body", b""))
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


async def serve(gateway: Gateway, scope: Scope, receive: Receive, send: Send, reply: Reply) -> None:
    received = time.perf_counter()
    endpoint = reply.endpoint
    headers = request_headers(scope)
    raw = await read_body(receive)
    data, body = endpoint.parse(raw)
    grant = await gateway.access.authorize(key_of(scope), body.model, ceiling_of(body, len(raw)))
    try:
        grant.cap_priority(headers)
        director = gateway.director
        inbound = Inbound(body, headers, home=gateway.response_homes.home_of(body), splits=endpoint.path in SPLIT_PATHS)
        exchange = director.open(inbound, request_id_of(headers, reply.ids), grant=grant, received_at=received)
        if not endpoint.tracked:
            untracked = await director.forward(exchange, gateway.upstream(upstream_request(exchange, endpoint.path, data)))
            reply.started = True
            await _send_whole(untracked, untracked.body, _headers(exchange, untracked), send)
            return
        await director.admit(exchange)
        request = upstream_request(exchange, endpoint.path, data, stream_usage=endpoint.stream_usage,
                                   trace_headers=gateway.tracing.upstream_headers(exchange))
        transport = gateway.upstream(request, exchange.plan.decision.prefill_for)
        answer = await director.validate(exchange, await director.dispatch(exchange, transport), transport)
        director.first_token(exchange)
        try:
            await _respond(gateway, exchange, answer, receive, send, reply)
        finally:
            if exchange.outcome is None:  # cut short before the relay ended it (a send failed, cancellation)
                if answer.splitter is not None:
                    answer.response.close()  # a stream the relay never took over (a whole body was released)
                await director.finish(exchange, Outcome(answer.replica.id, False, 499, None,
                                                        time.perf_counter() - answer.started_at, 0, 0))
    except RequestError as exc:  # refused after admission (shed, no replica, upstream failed): the key's headroom still holds
        exc.headers = (*exc.headers, *grant.headroom.headers())
        raise
    finally:
        gateway.access.release(grant)  # the key's concurrency slot, however the request ended


async def _respond(gateway: Gateway, exchange: Exchange, answer: Answer, receive: Receive, send: Send, reply: Reply) -> None:
    body = exchange.inbound.body
    assert exchange.attempt is not None
    variant = exchange.attempt.variant
    if (tap := exchange.attempt.tap) is not None:  # drawn for a shadow check: keep what the client gets
        send = tapped(send, tap)
    rewrite = model_rewrite(variant.served_model_name, body.model)
    response_headers = _headers(exchange, answer)

    async def on_done(outcome: Outcome) -> None:
        await gateway.director.finish(exchange, outcome)

    input_tokens = exchange.plan.profile.input_tokens
    if body.stream and answer.splitter is not None:
        endpoint = reply.endpoint
        strip_usage = endpoint.stream_usage and not (body.stream_options or {}).get("include_usage")
        options = StreamOptions(rewrite, strip_usage=strip_usage, input_tokens_estimate=input_tokens,
                                framing=endpoint.framing)
        reply.started = True
        await _send_stream(answer, options, on_done, response_headers, receive, send)
        return
    payload, outcome = finish_body(answer, rewrite, input_tokens)
    reply.started = True
    try:
        if body.stream and answer.status == 200:  # held back to be checked (gateway.flow.escalation)
            include_usage = bool((body.stream_options or {}).get("include_usage"))
            await _send_whole(answer, completion_events(payload, include_usage), response_headers, send, SSE)
            return
        await _send_whole(answer, payload, response_headers, send)
    finally:
        await on_done(outcome)


def tapped(send: Send, tap: AnswerSink) -> Send:
    """``send``, also handing ``tap`` each message once it went out."""

    async def send_and_keep(message: Message) -> None:
        await send(message)
        if message["type"] == "http.response.body":
            tap.received(message.get("body", b""))
        elif message["type"] == "http.response.start":
            content_type = next((v for k, v in message["headers"] if k == b"content-type"), b"")
            tap.started(message["status"], content_type)

    return send_and_keep


def _headers(exchange: Exchange, answer: Answer) -> list[tuple[bytes, bytes]]:
    """What the gateway tells the client about how its request was served."""
    overhead_ms = (exchange.overhead_s or 0.0) * 1e3
    headers = [
        (b"x-duet-variant", answer.replica.variant.encode()),
        (b"x-duet-replica", answer.replica.id.encode()),
        (b"x-duet-route", exchange.route.encode()),
        (b"x-duet-overhead-ms", f"{overhead_ms:.3f}".encode()),
        *session_headers(exchange.plan.session),
        (b"x-request-id", exchange.request_id.encode("latin-1")),
        *((name.encode(), value.encode()) for name, value in exchange.grant.headroom.headers()),
    ]
    if (escalation := exchange.escalation) is not None:
        headers.extend(escalation_headers(escalation))
    return headers


async def _send_whole(answer: Answer, payload: bytes, headers: list[tuple[bytes, bytes]], send: Send,
                      content_type: bytes | None = None) -> None:
    content_type = content_type or answer.response.header(b"content-type") or b"application/json"
    headers = [*headers, (b"content-type", content_type), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


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
            cut = options.framing.cut("The gateway is shutting down; the stream was cut at its drain timeout.",
                                      "service_unavailable", "gateway_shutting_down")
            await send({"type": "http.response.body", "body": cut, "more_body": False})
        raise
    finally:
        finished = True
        watcher.cancel()
