"""Relaying a replica's answer to the client: non-stream bodies with the model name rewritten,
streams event by event without buffering. Whatever happens, exactly one Outcome is reported."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from gateway.domain import Outcome
from gateway.proxy.forward import Answer
from gateway.proxy.http1 import UpstreamError, UpstreamTimeout
from gateway.proxy.sse import DONE, ModelRewrite, error_event, has_usage, is_usage_only, usage_of

OnDone = Callable[[Outcome], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class StreamOptions:
    rewrite: ModelRewrite
    # The client did not ask for usage: Duet asked for it (to count tokens) and strips it again.
    strip_usage: bool
    input_tokens_estimate: int


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


class _Tally:
    """What the relay learns from the events passing through."""

    __slots__ = ("options", "usage", "done_seen")

    def __init__(self, options: StreamOptions) -> None:
        self.options = options
        self.usage: tuple[int, int] | None = None
        self.done_seen = False

    def outgoing(self, event: bytes) -> bytes | None:
        """The bytes to send the client for one upstream event (None: drop it)."""
        if has_usage(event):
            self.usage = usage_of(event) or self.usage
            if self.options.strip_usage and is_usage_only(event):
                return None
        elif event.startswith(b"data: [DONE]"):
            self.done_seen = True
        return self.options.rewrite.apply(event)


async def relay_stream(answer: Answer, options: StreamOptions, on_done: OnDone) -> AsyncIterator[bytes]:
    """Yields the client's SSE bytes. A replica dying mid-stream ends the client's stream with an
    error event and ``[DONE]``; a client disconnect (``answer.client_gone``, or cancellation)
    closes the upstream connection so the replica stops generating."""
    tally = _Tally(options)
    ok, status = False, 200
    try:
        # One upstream read usually holds one event, sometimes several: send them as one write.
        first = [out for event in answer.first_events if (out := tally.outgoing(event)) is not None]
        if first:
            yield b"".join(first)
        assert answer.splitter is not None
        async for chunk in answer.response.iter_chunks():
            outgoing = [out for event in answer.splitter.feed(chunk) if (out := tally.outgoing(event)) is not None]
            if outgoing:
                yield outgoing[0] if len(outgoing) == 1 else b"".join(outgoing)
        ok = tally.done_seen
        if not ok:
            # The connection ended without [DONE]: the replica went away mid-answer.
            status = 502
            yield error_event("The replica closed the stream before it finished.")
            yield DONE
    except UpstreamError as exc:
        if answer.client_gone:
            ok, status = True, 499  # we closed the upstream because the client left
            return
        status = 504 if isinstance(exc, UpstreamTimeout) else 502
        yield error_event(f"The replica failed mid-stream: {exc}.")
        yield DONE
    except (asyncio.CancelledError, GeneratorExit):
        # The client went away: not the replica's fault.
        ok, status = True, 499
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
