"""Relaying a replica's answer to the client: non-stream bodies with the model name rewritten,
streams as they arrive without buffering. Whatever happens, exactly one Outcome is reported.

A stream is handled a read at a time, not an event at a time: whatever complete events one
upstream read brought go to the client as one piece, after one byte replace of the model name
and two searches (``[DONE]``, usage). Only the block that carries usage (the last events of a
stream) is split into events and parsed. Per event work was a large part of the gateway's CPU
per stream (a stream is ~20 events).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.outcome import Outcome
from gateway.proxy.forward import Answer
from gateway.proxy.framing import OPENAI, Framing
from gateway.proxy.http1 import UpstreamError, UpstreamTimeout
from gateway.proxy.sse import (
    ModelRewrite,
    has_usage,
    is_usage_only,
    split_events,
    usage_of,
    usage_position,
)

log = logging.getLogger(__name__)

OnDone = Callable[[Outcome], Awaitable[None]]
# Sends one piece of the client's stream; ``last``: it ends the stream.
Write = Callable[[bytes, bool], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class StreamOptions:
    rewrite: ModelRewrite
    # The client did not ask for usage: Duet asked for it (to count tokens) and strips it again.
    strip_usage: bool
    input_tokens_estimate: int
    # What ends the API's stream (chat's [DONE], the Messages and Responses APIs' last events).
    framing: Framing = OPENAI


def finish_body(answer: Answer, rewrite: ModelRewrite, input_tokens_estimate: int) -> tuple[bytes, Outcome]:
    """A non-stream answer's body for the client, and its outcome."""
    body = rewrite.apply(answer.body)
    usage = usage_of(answer.body) if answer.status == 200 else None
    input_tokens, output_tokens = usage or (input_tokens_estimate if answer.status == 200 else 0, 0)
    now = time.perf_counter()
    outcome = Outcome(
        answer.replica.id, ok=answer.status < 500, status=answer.status, ttft_s=None,
        duration_s=now - answer.started_at, input_tokens=input_tokens, output_tokens=output_tokens,
    )
    return body, outcome


class StreamTally:
    """What the relay learns from the events passing through (the proxy's relay, and the
    endpoint picker's, ``gateway.epp``, which sees the same bytes pass through Envoy)."""

    __slots__ = ("options", "usage", "done_seen")

    def __init__(self, options: StreamOptions) -> None:
        self.options = options
        self.usage: tuple[int, int] | None = None
        self.done_seen = False

    def outgoing(self, block: bytes) -> bytes:
        """The bytes to send the client for a block of complete upstream events."""
        usage_at = usage_position(block)
        if usage_at < 0:
            if self.options.framing.ends(block):
                self.done_seen = True
            return self.options.rewrite.apply_to_events(block)
        # Only the events from the first one carrying usage on are split and looked at (a read
        # that fell behind may hold most of the stream before them).
        boundary = block.rfind(b"\n\n", 0, usage_at)
        start = boundary + 2 if boundary >= 0 else 0
        head = self.options.rewrite.apply_to_events(block[:start]) if start else b""
        return head + b"".join(self._event(event) for event in split_events(block[start:]))

    def _event(self, event: bytes) -> bytes:
        if has_usage(event):
            self.usage = usage_of(event) or self.usage
            if self.options.strip_usage and is_usage_only(event):
                return b""
        if self.options.framing.ends(event):  # the Responses API's last event carries the usage
            self.done_seen = True
        return self.options.rewrite.apply(event)


async def relay_stream(answer: Answer, options: StreamOptions, write: Write, on_done: OnDone) -> None:
    """Sends the client's SSE bytes through ``write(piece, last)``; ``last`` is true for the
    piece that ends the client's stream (it holds ``[DONE]``), after which the upstream is only
    drained so its connection can be reused. A replica dying mid-stream ends the client's
    stream with an error event and ``[DONE]``; a client disconnect (``answer.client_gone``, or
    cancellation) closes the upstream connection so the replica stops generating."""
    tally = StreamTally(options)
    ok, status = False, 200
    splitter, response = answer.splitter, answer.response
    assert splitter is not None
    try:
        piece = tally.outgoing(answer.first_events)
        if piece:
            await write(piece, tally.done_seen)
        while (chunk := await response.next_chunk()) is not None:
            if tally.done_seen:
                continue  # the client has its whole answer; read on so the connection can be reused
            block = splitter.complete(chunk)
            if block and (piece := tally.outgoing(block)):
                await write(piece, tally.done_seen)
        ok = tally.done_seen
        if not ok:
            # The connection ended without [DONE]: the replica went away mid-answer.
            status = 502
            await write(options.framing.cut("The replica closed the stream before it finished.", "upstream_error",
                                            "upstream_failed"), True)
    except UpstreamError as exc:
        if tally.done_seen:
            ok = True  # broke after the answer was complete: the client has all of it
            return
        if answer.client_gone:
            ok, status = True, 499  # we closed the upstream because the client left
            return
        timed_out = isinstance(exc, UpstreamTimeout)
        status = 504 if timed_out else 502
        log.warning("the stream from replica %s failed mid-stream: %s", answer.replica.id, exc)  # not to the client
        # The client learns what kind of failure cut its stream (a stall is not a crash), never where.
        cut = (options.framing.cut("The replica stopped sending mid-stream; the stream was cut at the idle timeout.",
                                   "upstream_error", "upstream_timeout") if timed_out else
               options.framing.cut("The replica failed mid-stream.", "upstream_error", "upstream_failed"))
        await write(cut, True)
    except asyncio.CancelledError:
        ok = True
        if not tally.done_seen:
            status = 499  # the client went away: not the replica's fault
        raise
    finally:
        if ok and status == 200:
            answer.response.release()
        else:
            answer.response.close()
        input_tokens, output_tokens = tally.usage or (options.input_tokens_estimate, 0)
        ttft = None if answer.first_event_at is None else answer.first_event_at - answer.started_at
        outcome = Outcome(
            answer.replica.id, ok=ok, status=status, ttft_s=ttft,
            duration_s=time.perf_counter() - answer.started_at,
            input_tokens=input_tokens, output_tokens=output_tokens,
        )
        await on_done(outcome)
