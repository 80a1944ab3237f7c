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
    client_name: str

    @classmethod
    def between(cls, served_name: str, client_name: str) -> ModelRewrite:
        return cls(b'"model":' + orjson.dumps(served_name), b'"model":' + orjson.dumps(client_name), client_name)

    def apply(self, data: bytes) -> bytes:
        """vLLM writes compact JSON, so a byte replace does it; other spacing takes the slow path."""
        if self.upstream in data:
            return data.replace(self.upstream, self.client, 1)
        if b'"model"' not in data:
            return data
        return self._reencode(data)

    def _reencode(self, data: bytes) -> bytes:
        event = data.startswith(b"data: ")
        payload = data[6:] if event else data
        try:
            document = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return data
        if not isinstance(document, dict) or "model" not in document:
            return data
        document["model"] = self.client_name
        encoded = orjson.dumps(document)
        return b"data: " + encoded + b"\n\n" if event else encoded


def has_usage(data: bytes) -> bool:
    """Whether a chunk or body carries a usage object (not ``"usage":null``)."""
    return b'"usage":{' in data or b'"usage": {' in data


def is_usage_only(event: bytes) -> bool:
    """The final usage chunk of a stream: no choices, only usage."""
    return (b'"choices":[]' in event or b'"choices": []' in event) and has_usage(event)


def usage_of(event_or_body: bytes) -> tuple[int, int] | None:
    """(prompt_tokens, completion_tokens) from a chunk or a whole response, if it reports usage."""
    if not has_usage(event_or_body):
        return None
    payload = event_or_body[6:] if event_or_body.startswith(b"data: ") else event_or_body
    try:
        usage = orjson.loads(payload).get("usage") or {}
    except orjson.JSONDecodeError:
        return None
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
