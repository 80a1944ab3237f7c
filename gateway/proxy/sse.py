"""Server-sent events as vLLM writes them (``data: {json}\\n\\n`` ... ``data: [DONE]\\n\\n``), handled
as bytes: the proxy rewrites and inspects events without decoding JSON on the hot path."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import orjson

DONE = b"data: [DONE]\n\n"
_DONE_AFTER_EVENT = b"\n\n" + DONE


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

    def complete(self, chunk: bytes) -> bytes:
        """Every complete event received so far, as one block (``b""`` when none is complete yet);
        the start of an unfinished event waits for the rest. One search per read instead of one
        per event: the relay inspects and forwards whole reads (see ``gateway.proxy.relay``)."""
        data = self._buffer + chunk if self._buffer else chunk
        end = data.rfind(b"\n\n") + 2
        if end == 1:
            self._buffer = data
            return b""
        if end == len(data):
            self._buffer = b""
            return data
        self._buffer = data[end:]
        return data[:end]

    @property
    def pending(self) -> bytes:
        return self._buffer


def split_events(block: bytes) -> list[bytes]:
    """The events of a block of complete events (as ``EventSplitter.complete`` returns)."""
    return [event + b"\n\n" for event in block.split(b"\n\n")[:-1]]


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

    def apply_to_events(self, block: bytes) -> bytes:
        """The same for a block of complete SSE events, with one replace over the whole block.
        Replacing every occurrence is safe: inside a JSON string the quotes around ``model``
        would be escaped, so the pattern only matches a ``model`` key. Events whose spacing
        differs take the per-event slow path."""
        if self.upstream in block:
            return block.replace(self.upstream, self.client)
        if b'"model"' not in block:
            return block
        return b"".join(self._reencode(event) for event in split_events(block))

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


def usage_position(data: bytes) -> int:
    """Where the first usage object starts in ``data`` (-1: none)."""
    compact, spaced = data.find(b'"usage":{'), data.find(b'"usage": {')
    return compact if spaced < 0 or 0 <= compact < spaced else spaced


def has_done(block: bytes) -> bool:
    """Whether a block of complete events holds the ``[DONE]`` event."""
    return block.startswith(DONE) or _DONE_AFTER_EVENT in block


def is_usage_only(event: bytes) -> bool:
    """The final usage chunk of a stream: no choices, only usage."""
    return (b'"choices":[]' in event or b'"choices": []' in event) and has_usage(event)


def usage_of(event_or_body: bytes) -> tuple[int, int] | None:
    """(prompt_tokens, completion_tokens) from a chunk or a whole response, if it reports usage:
    OpenAI's ``prompt_tokens``/``completion_tokens``, or the Messages and Responses APIs'
    ``input_tokens``/``output_tokens`` (the Responses stream's under ``response``)."""
    if not has_usage(event_or_body):
        return None
    payload = event_or_body
    if payload.startswith(b"event: "):  # a named event: its data line follows the name
        payload = payload[payload.find(b"\ndata: ") + 1 :]
    if payload.startswith(b"data: "):
        payload = payload[6:]
    try:
        document = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    usage = document.get("usage") or (document.get("response") or {}).get("usage") or {}
    if "input_tokens" in usage:
        return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
