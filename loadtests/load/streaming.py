"""Timing an OpenAI chat-completions stream as vLLM's ``bench serve`` does.

TTFT is taken at the first SSE event that carries generated text or a tool-call delta (the role-only
first event does not count); ITL is the gap between later such events; the output token count is
the final usage chunk's ``completion_tokens`` (requested with ``stream_options.include_usage``),
falling back to the number of content events when a server sends no usage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class StreamResult:
    """What one streamed response did. Times in seconds from the request's send."""

    ttft_s: float | None
    latency_s: float
    output_tokens: int
    input_tokens: int | None
    itl_s: tuple[float, ...]
    model: str = ""
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    error: str = ""


@dataclass
class _Accumulator:
    """Mutable while one stream is read; frozen into a StreamResult at the end."""

    started: float
    first: float | None = None
    last: float | None = None
    gaps: list[float] = field(default_factory=list)
    events: int = 0
    usage: dict[str, Any] | None = None
    model: str = ""
    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    error: str = ""

    def event(self, payload: dict[str, Any], now: float) -> None:
        self.model = self.model or str(payload.get("model") or "")
        error = payload.get("error")
        if error:
            self.error = str(error.get("message", error) if isinstance(error, dict) else error)
        if payload.get("usage"):
            self.usage = payload["usage"]
        for choice in payload.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls"):
                self._generated(now)
            if delta.get("content"):
                self.text.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                self._tool_delta(call)

    def _generated(self, now: float) -> None:
        self.events += 1
        if self.first is None:
            self.first = now
        elif self.last is not None:
            self.gaps.append(now - self.last)
        self.last = now

    def _tool_delta(self, call: dict[str, Any]) -> None:
        slot = self.calls.setdefault(int(call.get("index", 0)), {"id": "", "name": "", "arguments": ""})
        function = call.get("function") or {}
        slot["id"] = call.get("id") or slot["id"]
        slot["name"] += function.get("name") or ""
        slot["arguments"] += function.get("arguments") or ""

    def result(self, ended: float) -> StreamResult:
        usage = self.usage or {}
        return StreamResult(
            ttft_s=None if self.first is None else self.first - self.started,
            latency_s=ended - self.started,
            output_tokens=int(usage.get("completion_tokens") or self.events),
            input_tokens=usage.get("prompt_tokens"),
            itl_s=tuple(self.gaps),
            model=self.model,
            text="".join(self.text),
            tool_calls=tuple(ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(self.calls.items())),
            error=self.error,
        )


def read_stream(chunks: Iterable[bytes], clock: Callable[[], float], started: float) -> StreamResult:
    """Read SSE bytes as they arrive (``chunks`` may split or join events anywhere), timing each
    event with ``clock`` when its line completes."""
    acc = _Accumulator(started=started)
    pending = b""
    for chunk in chunks:
        now = clock()
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            _line(acc, line.strip(), now)
    _line(acc, pending.strip(), clock())
    return acc.result(clock())


def _line(acc: _Accumulator, line: bytes, now: float) -> None:
    if not line.startswith(b"data:"):
        return
    data = line[5:].strip()
    if not data or data == b"[DONE]":
        return
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        acc.error = acc.error or f"unparsable event: {data[:80]!r}"
        return
    if isinstance(payload, dict):
        acc.event(payload, now)
