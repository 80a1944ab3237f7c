"""The response on its way back through the data plane: Duet's headers added (``x-duet-*``),
the body observed as the proxy's relay observes it (the served model name rewritten back to the
client's, usage counted and stripped when the client did not ask for it, the first token), and
the outcome handed to the director once the body ended. In FULL_DUPLEX_STREAMED mode every chunk
goes back to Envoy as a streamed body mutation; a whole (non-stream) answer is held until its
end so its headers can carry its new length."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Protocol

from gateway.endpoints import Endpoint, RequestBody
from gateway.epp import wire
from gateway.epp.handoff import EnvoyAnswer
from gateway.epp.wire import BodyMode, Message
from gateway.flow import Director, Exchange, Outcome
from gateway.proxy.relay import StreamOptions, StreamTally
from gateway.proxy.sse import EventSplitter, ModelRewrite, usage_of
from gateway.sessions import session_headers


class Channel(Protocol):
    """The ext_proc stream: ``read`` gives the data plane's next message (None once it closed it)."""

    async def read(self) -> Message | None: ...

    async def write(self, response: Message) -> None: ...

    def answered(self) -> None:
        """The data plane has the whole answer: the stream may end before the bookkeeping."""


class Passage:
    """One response through the picker; ``mode``: how the data plane sends its body."""

    def __init__(self, director: Director, channel: Channel, mode: BodyMode) -> None:
        self._director = director
        self._channel = channel
        self._mode = mode
        self._trailers = False  # the response ended with trailers: answered after its last body piece
        # The outcome, known once the last body piece is in hand and set before it is written: the
        # data plane may close the stream as soon as it has that piece (the client has its answer),
        # cancelling us before the outcome is reported; the caller then reports this one, not a 499.
        self.settled: Outcome | None = None

    async def relay(self, exchange: Exchange, endpoint: Endpoint[RequestBody], answer: EnvoyAnswer) -> None:
        """The response passes through; the outcome is reported once it ended."""
        body = exchange.inbound.body
        rewrite = ModelRewrite.between(exchange.plan.target.model.variant_of(answer.replica).served_model_name, body.model)
        headers = duet_headers(exchange, answer)
        if answer.head.end_of_stream or self._mode is BodyMode.UNSUPPORTED:
            self._settle(answer, answer.head.status < 500, None, (exchange.plan.profile.input_tokens, 0))
            await self._channel.write(wire.response_headers(headers))
            await self._end(exchange)
        elif body.stream and answer.head.status == 200:
            await self._relay_stream(exchange, endpoint, answer, rewrite, headers)
        else:
            await self._relay_whole(exchange, answer, rewrite, headers)

    async def relay_untracked(self, exchange: Exchange, answer: EnvoyAnswer) -> None:
        """/tokenize and the like: headers added, the body passed through unchanged."""
        await self._channel.write(wire.response_headers(duet_headers(exchange, answer)))
        if answer.head.end_of_stream:
            return
        async for chunk, end in self._chunks():
            await self._write_body(chunk, end)

    async def _relay_stream(self, exchange: Exchange, endpoint: Endpoint[RequestBody], answer: EnvoyAnswer,
                            rewrite: ModelRewrite, headers: list[tuple[str, str]]) -> None:
        body = exchange.inbound.body
        strip = endpoint.stream_usage and not (body.stream_options or {}).get("include_usage")
        tally = StreamTally(StreamOptions(rewrite, strip_usage=strip, input_tokens_estimate=exchange.plan.profile.input_tokens,
                                          framing=endpoint.framing))
        splitter = EventSplitter()
        await self._channel.write(wire.response_headers(headers))
        first_at: float | None = None
        async for chunk, end in self._chunks():
            if first_at is None and chunk:
                first_at = time.perf_counter()
                self._director.first_token(exchange)
            piece = tally.outgoing(splitter.complete(chunk)) if chunk else b""
            if end:
                ttft = None if first_at is None else first_at - answer.started_at
                tokens = tally.usage or (exchange.plan.profile.input_tokens, 0)
                self._settle(answer, tally.done_seen, ttft, tokens, 200 if tally.done_seen else 502)
            await self._write_body(piece + splitter.pending if end else piece, end)
        await self._end(exchange)

    async def _relay_whole(self, exchange: Exchange, answer: EnvoyAnswer, rewrite: ModelRewrite,
                           headers: list[tuple[str, str]]) -> None:
        full_duplex = self._mode is BodyMode.FULL_DUPLEX
        if not full_duplex:  # buffered: Envoy sends the body once the headers are answered
            await self._channel.write(wire.response_headers(headers))
        raw = b"".join([chunk async for chunk, _ in self._chunks()])
        ok = answer.head.status == 200
        payload = rewrite.apply(raw) if ok else raw
        self._director.first_token(exchange)
        usage = usage_of(raw) if ok else None
        tokens = usage or (exchange.plan.profile.input_tokens if ok else 0, 0)
        self._settle(answer, answer.head.status < 500, None, tokens)
        if full_duplex:  # the headers waited for the body, so they carry its new length
            await self._channel.write(wire.response_headers(headers, body_length=len(payload)))
        await self._write_body(payload, True)
        await self._end(exchange)

    async def _chunks(self) -> AsyncIterator[tuple[bytes, bool]]:
        """The response body's chunks as (bytes, last) up to its end; a buffered body is one chunk."""
        while (message := await self._channel.read()) is not None:
            if message.HasField("response_body"):
                end = message.response_body.end_of_stream
                yield message.response_body.body, end
                if end:
                    return
            elif message.HasField("response_trailers"):
                self._trailers = True
                yield b"", True
                return
        raise asyncio.CancelledError("the data plane closed the stream mid-response")

    async def _write_body(self, piece: bytes, end: bool) -> None:
        """``piece`` back to the data plane; ``end``: the body ended (then trailers, if it had any)."""
        if self._mode is BodyMode.BUFFERED:
            await self._channel.write(wire.whole_body(piece, response=True))
        else:
            for message in wire.streamed_body(piece, response=True, end=end and not self._trailers):
                await self._channel.write(message)
        if end and self._trailers:
            await self._channel.write(wire.trailers_response(response=True))

    def _settle(self, answer: EnvoyAnswer, ok: bool, ttft_s: float | None, tokens: tuple[int, int],
                status: int | None = None) -> None:
        """``tokens``: (input, output) as the replica's usage said, or the estimate."""
        self.settled = Outcome(answer.replica.id, ok, answer.head.status if status is None else status, ttft_s,
                               time.perf_counter() - answer.started_at, *tokens)

    async def _end(self, exchange: Exchange) -> None:
        assert self.settled is not None, "settled before the last piece was written"
        # The last piece and the stream's end leave (the transport sends what a step wrote once
        # it yields) before the bookkeeping, which the client need not wait for: measured
        # 0.1-0.2 ms off each answer, and one write fewer. Once ended, a reset from the data
        # plane no longer cancels the bookkeeping half-way.
        self._channel.answered()
        await asyncio.sleep(0)
        await self._director.finish(exchange, self.settled)


def response_mode(first: Message) -> BodyMode:
    """How the data plane sends the response body (the first message's ``protocol_config``)."""
    if not first.HasField("protocol_config"):
        return BodyMode.FULL_DUPLEX
    return wire.mode_of(first.protocol_config.response_body_mode)


def duet_headers(exchange: Exchange, answer: EnvoyAnswer) -> list[tuple[str, str]]:
    """What the client is told about how its request was served (as the proxy tells it)."""
    overhead_ms = (exchange.overhead_s or 0.0) * 1e3
    return [
        ("x-duet-variant", answer.replica.variant),
        ("x-duet-replica", answer.replica.id),
        ("x-duet-route", exchange.route),
        ("x-duet-overhead-ms", f"{overhead_ms:.3f}"),
        *((name.decode(), value.decode("latin-1")) for name, value in session_headers(exchange.plan.session)),
        ("x-request-id", exchange.request_id),
        *exchange.grant.headroom.headers(),
    ]
