"""Server-sent events as vLLM writes them (``data: {json}\\n\\n`` ... ``data: [DONE]\\n\\n``), handled
as bytes: the proxy rewrites and inspects events without decoding JSON on the hot path."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import orjson

DONE = b"data: [DONE]\n\n"


def error_event(message: str, error_type: str = "upstream_error", code: str = "upstream_failed") -> bytes:
    """The event a client receives when its stream cannot finish (then ``DONE``)."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return b"data: " + orjson.dumps(body) + b"\n\n"


class EventSplitter:
    """Turns arbitrary byte chunks into complete SSE events (each ending in a blank line)."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        data = self._buffer + chunk if self._buffer else chunk
        start = 0
        while True:
            end = data.find(b"\n\n", start)
            if end < 0:
                break
            yield data[start : end + 2]
            start = end + 2
        self._buffer = data[start:]

    @property
    def pending(self) -> bytes:
        return self._buffer


@dataclass(frozen=True, slots=True)
class ModelRewrite:
    """Replaces the replica's served model name with the name the client asked for."""

    upstream: bytes
    client: bytes

    @classmethod
    def between(cls, served_name: str, client_name: str) -> ModelRewrite:
        return cls(b'"model":' + orjson.dumps(served_name), b'"model":' + orjson.dumps(client_name))

    def apply(self, data: bytes) -> bytes:
        return data.replace(self.upstream, self.client, 1)


def is_usage_only(event: bytes) -> bool:
    """The final usage chunk of a stream: no choices, only usage."""
    return b'"choices":[]' in event and b'"usage":{' in event


def usage_of(event_or_body: bytes) -> tuple[int, int] | None:
    """(prompt_tokens, completion_tokens) from a chunk or a whole response, if it reports usage."""
    if b'"usage":{' not in event_or_body:
        return None
    payload = event_or_body[6:] if event_or_body.startswith(b"data: ") else event_or_body
    try:
        usage = orjson.loads(payload).get("usage") or {}
    except orjson.JSONDecodeError:
        return None
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
