"""One ext_proc stream, which is one HTTP request through the data plane, run by the director.

    request headers -> body (whole, or chunks up to server.max_body_bytes)
      -> parse (the endpoint's body type) -> key, quota -> Director.open -> admit
      -> dispatch through EnvoyHandoff: the pick and the body Duet sends out, then the response's
         headers say who answered -> Duet's headers on the response -> its body observed (model
         name rewritten, usage counted, first token, end) -> Director.finish

What the proxy path does between body and outcome (``gateway.api.serving``) happens here in the
same order with the same parts; only the transport differs. A refusal at any step is an
immediate response with the OpenAI error body the proxy would have written.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.access.ceiling import ceiling_of
from gateway.access.guard import Grant
from gateway.access.keys import bearer_token
from gateway.endpoints import ENDPOINTS, Endpoint, RequestBody
from gateway.epp import wire
from gateway.epp.handoff import EnvoyHandoff, endpoint_of
from gateway.epp.passage import Channel, Passage, response_mode
from gateway.epp.wire import BodyMode, Message, ResponseHead
from gateway.errors import BodyTooLarge, InvalidRequest, NoHealthyReplica, RequestError, error_body
from gateway.flow import OPT_IN_HEADER, Inbound, Outcome, upstream_request
from gateway.runtime import Gateway

log = logging.getLogger(__name__)

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:=+/-]{1,128}")


@dataclass(frozen=True, slots=True)
class Arrival:
    """A request as the data plane handed it over: headers, path, whole body, body mode, subset."""

    headers: dict[str, str]
    path: str
    body: bytes
    mode: BodyMode
    subset: tuple[str, ...] | None
    received_at: float
    trailers: bool = False  # the request ended with trailers (answered after its body)


class PickerStream:
    """Runs one request's stream: ``run`` returns when the data plane has its last answer."""

    def __init__(self, gateway: Gateway, channel: Channel, fallbacks: int = 0) -> None:
        self._gateway = gateway
        self._fallbacks = fallbacks
        self._channel = channel
        self._passage = Passage(gateway.director, channel, BodyMode.FULL_DUPLEX)

    async def run(self) -> None:
        first = await self._channel.read()
        if first is None or not first.HasField("request_headers"):
            return
        self._passage = Passage(self._gateway.director, self._channel, response_mode(first))
        try:
            arrival = await self._arrival(first)
            await self._serve(arrival)
        except RequestError as error:
            await self._channel.write(wire.refusal(error, error_body(error.message, error.error_type, error.param,
                                                                     error.code)))

    async def _arrival(self, first: Message) -> Arrival:
        received = time.perf_counter()
        headers = wire.header_map(first.request_headers)
        mode = wire.body_mode(first)
        if mode is BodyMode.UNSUPPORTED:
            raise NoHealthyReplica("The endpoint picker needs the request body: set the ext_proc filter's "
                                   "request_body_mode to FULL_DUPLEX_STREAMED (or BUFFERED).", code="epp_body_mode")
        if mode is BodyMode.BUFFERED and not first.request_headers.end_of_stream:
            await self._channel.write(wire.continue_request_headers())
        body, trailers = (b"", False) if first.request_headers.end_of_stream else await self._read_body()
        return Arrival(headers, headers.get(":path", "").split("?", 1)[0], body, mode, wire.subset_hint(first), received,
                       trailers)

    async def _read_body(self) -> tuple[bytes, bool]:
        """The request body, whole, and whether trailers ended it; BodyTooLarge past
        ``server.max_body_bytes``."""
        limit = self._gateway.current.config.server.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        while (message := await self._channel.read()) is not None:
            if message.HasField("request_trailers"):
                return b"".join(chunks), True
            if not message.HasField("request_body"):
                continue
            chunks.append(message.request_body.body)
            size += len(message.request_body.body)
            if size > limit:
                raise BodyTooLarge(f"The request body is larger than the limit of {limit} bytes.")
            if message.request_body.end_of_stream:
                break
        return b"".join(chunks), False

    async def _serve(self, arrival: Arrival) -> None:
        endpoint = ENDPOINTS.get(arrival.path)
        if endpoint is None or arrival.headers.get(":method", "POST") != "POST":
            raise InvalidRequest(f"The endpoint picker serves POST to {', '.join(ENDPOINTS)}; not {arrival.path}.",
                                 code="unsupported_path")
        data, body = endpoint.parse(arrival.body)
        gateway = self._gateway
        key = await gateway.access.authenticate(bearer_token(_authorization(arrival.headers)))
        grant = await gateway.access.authorize(key, body.model, ceiling_of(body, len(arrival.body)))
        try:
            grant.cap_priority(arrival.headers)
            await self._lifecycle(arrival, endpoint, data, body, grant)
        except RequestError as exc:
            exc.headers = (*exc.headers, *grant.headroom.headers())
            raise
        finally:
            gateway.access.release(grant)

    async def _lifecycle(self, arrival: Arrival, endpoint: Endpoint[RequestBody], data: dict[str, object],
                         body: RequestBody, grant: Grant) -> None:
        gateway = self._gateway
        director = gateway.director
        headers = {k: v for k, v in arrival.headers.items() if not k.startswith(":") and k != OPT_IN_HEADER}
        inbound = Inbound(body, headers, home=gateway.response_homes.home_of(body), subset=self._subset(arrival, body))
        exchange = director.open(inbound, _request_id(headers), grant=grant, received_at=arrival.received_at)
        if endpoint.tracked:
            await director.admit(exchange)
        request = upstream_request(exchange, endpoint.path, dict(data), stream_usage=endpoint.stream_usage)
        handoff = EnvoyHandoff(exchange, request, lambda endpoints, sent: self._send_pick(endpoints, sent, request.headers,
                                                                                          arrival),
                               self._next_head, time.perf_counter, self._fallbacks)
        if not endpoint.tracked:
            await self._passage.relay_untracked(exchange, await director.forward(exchange, handoff))
            return
        answer = await director.dispatch(exchange, handoff)
        try:
            await self._passage.relay(exchange, endpoint, answer)
        finally:
            if exchange.outcome is None:  # cut short (the data plane closed the stream, cancellation)
                # After the last piece was handed over the client has its answer: that outcome.
                await director.finish(exchange, self._passage.settled or Outcome(
                    answer.replica.id, False, 499, None, time.perf_counter() - answer.started_at, 0, 0))

    def _subset(self, arrival: Arrival, body: RequestBody) -> frozenset[str] | None:
        """The replica ids the subset hint names; 503 when it names none of the model's (the
        protocol's answer to an empty or ineligible subset)."""
        if arrival.subset is None:
            return None
        config = self._gateway.current.config
        model = config.models.get(body.model.split(":", 1)[0])
        replicas = model.replicas if model is not None else config.replicas
        hinted = set(arrival.subset)
        ids = frozenset(r.id for r in replicas if endpoint_of(r) in hinted)
        if not ids:
            raise NoHealthyReplica("None of the endpoints the gateway allows for this request serves its model.",
                                   code="empty_subset", retry_after_s=1.0)
        return ids

    async def _send_pick(self, endpoints: Sequence[str], body: bytes, upstream_headers: bytes, arrival: Arrival) -> None:
        """The pick, with the body Duet sends and its upstream headers (request id, task)."""
        if arrival.mode is BodyMode.BUFFERED:
            await self._channel.write(wire.buffered_pick(endpoints, body))
            return
        response = wire.picked(endpoints, len(body), arrival.mode)
        options = response.request_headers.response.header_mutation.set_headers
        for line in upstream_headers.split(b"\r\n"):
            name, sep, value = line.partition(b": ")
            if sep:
                header = options.add().header
                header.key = name.decode("latin-1")
                header.raw_value = value
        await self._channel.write(response)
        for piece in wire.streamed_body(body, response=False, end=not arrival.trailers):
            await self._channel.write(piece)
        if arrival.trailers:
            await self._channel.write(wire.trailers_response(response=False))

    async def _next_head(self) -> ResponseHead | None:
        while (message := await self._channel.read()) is not None:
            if message.HasField("response_headers"):
                return wire.response_head(message)
            if message.HasField("request_trailers"):
                await self._channel.write(wire.trailers_response(response=False))
        return None


def _authorization(headers: dict[str, str]) -> str | None:
    if (value := headers.get("authorization")) is not None:
        return value
    key = headers.get("x-api-key")  # how Anthropic's clients send a key
    return None if key is None else f"Bearer {key}"


def _request_id(headers: dict[str, str]) -> str:
    """The client's x-request-id when it is a plain token, else a new one."""
    claimed = headers.get("x-request-id")
    return claimed if claimed is not None and _REQUEST_ID.fullmatch(claimed) else os.urandom(12).hex()
