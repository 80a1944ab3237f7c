"""The answer a sampled request's client received, kept for the shadow check that scores it
(``gateway.parity.shadow``): the status, whether it was a stream, and the body's bytes as the
client got them (model name rewritten, usage stripped when it did not ask for it).

Only a request drawn at dispatch has a tap (``gateway.parity.sample``); the HTTP layer passes
its writes through it, and nothing else: an unsampled request keeps no byte of its answer. A tap
holds at most ``limit`` bytes; past that it lets go of what it held and the answer is not scored
(a shadow check must not pin a long stream's text in memory)."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.parity.sample import Sample
from gateway.proxy.whole_stream import stream_completion

# An answer longer than this is not scored. 1 MiB is ~250k tokens of text, far past what a check
# can afford to run again on the standard; the largest SSE streams of max-length answers fit.
TAP_LIMIT_BYTES = 1 << 20


class AnswerTap:
    """``sample``: the pair the request was drawn for."""

    __slots__ = ("sample", "limit", "status", "streamed", "overflowed", "_pieces", "_size")

    def __init__(self, sample: Sample, limit: int = TAP_LIMIT_BYTES) -> None:
        self.sample = sample
        self.limit = limit
        self.status: int | None = None
        self.streamed = False
        self.overflowed = False
        self._pieces: list[bytes] = []
        self._size = 0

    def started(self, status: int, content_type: bytes) -> None:
        """The response's head went out."""
        self.status = status
        self.streamed = content_type.startswith(b"text/event-stream")

    def received(self, piece: bytes) -> None:
        """A piece of the body went out."""
        if self.overflowed or not piece:
            return
        self._size += len(piece)
        if self._size > self.limit:
            self.overflowed, self._pieces = True, []
            return
        self._pieces.append(piece)

    def completion(self) -> dict[str, Any]:
        """The chat completion the client received (a stream's deltas added up). Raises ValueError
        when there is none to score: not a 200, past the limit, or not a chat completion."""
        if self.status != 200:
            raise ValueError(f"the client's answer was a {self.status}")
        if self.overflowed:
            raise ValueError(f"the client's answer was longer than {self.limit} bytes")
        body = b"".join(self._pieces)
        if self.streamed:
            return stream_completion(body)
        completion = orjson.loads(body)  # a JSONDecodeError is a ValueError
        if not isinstance(completion, dict) or not isinstance(completion.get("choices"), list):
            raise ValueError("the client's answer is not a chat completion")
        return completion
