"""A whole chat completion written as the SSE stream vLLM would have sent: for a streamed request
whose answer the gateway held back to check it (``gateway.flow.escalation``); and back, a chat
stream as the whole completion its deltas add up to: for the shadow check that scores a streamed
answer the client received (``gateway.parity.tap``).

The chunks follow vLLM's shape: a first chunk per choice with the role, one with its content or
its tool calls (a call's whole arguments in one delta), a last one with the finish reason, then
the usage chunk when the client asked for it (``stream_options.include_usage``), then ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

import orjson


def completion_events(payload: bytes, include_usage: bool) -> bytes:
    """The SSE events of ``payload`` (a chat completion, model name already the client's)."""
    completion = orjson.loads(payload)
    head = {"id": completion.get("id"), "object": "chat.completion.chunk", "created": completion.get("created"),
            "model": completion.get("model")}
    chunks: list[dict[str, Any]] = []
    for choice in completion.get("choices", []):
        index, message = choice.get("index", 0), choice.get("message") or {}
        chunks.append(_chunk(head, index, {"role": message.get("role", "assistant"), "content": ""}))
        if message.get("content"):
            chunks.append(_chunk(head, index, {"content": message["content"]}))
        if calls := message.get("tool_calls"):
            chunks.append(_chunk(head, index, {"tool_calls": [{**call, "index": i} for i, call in enumerate(calls)]}))
        chunks.append(_chunk(head, index, {}, choice.get("finish_reason")))
    if include_usage and completion.get("usage") is not None:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return b"".join(b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


def _chunk(head: dict[str, Any], index: int, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {**head, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}


def stream_completion(events: bytes) -> dict[str, Any]:
    """The chat completion a chat SSE stream adds up to: per choice, its content (and reasoning)
    concatenated, its tool calls with their argument fragments joined in order, its finish reason;
    the stream's id, model and usage. Raises ValueError on an event that is not a chat chunk (an
    error event: the stream was cut)."""
    head: dict[str, Any] = {}
    choices: dict[int, _Choice] = {}
    for line in events.split(b"\n"):
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        chunk = orjson.loads(line[6:])
        if not isinstance(chunk, dict) or "error" in chunk or not isinstance(chunk.get("choices"), list):
            raise ValueError("not a chat completion chunk")
        head = head or {k: chunk.get(k) for k in ("id", "created", "model")}
        if chunk.get("usage") is not None:
            head["usage"] = chunk["usage"]
        for part in chunk["choices"]:
            choices.setdefault(int(part.get("index", 0)), _Choice()).add(part)
    return {**head, "object": "chat.completion",
            "choices": [choice.whole(index) for index, choice in sorted(choices.items())]}


class _Choice:
    """One choice's deltas as they add up."""

    __slots__ = ("content", "reasoning", "calls", "finish_reason")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None

    def add(self, part: dict[str, Any]) -> None:
        delta = part.get("delta") or {}
        if delta.get("content"):
            self.content.append(delta["content"])
        if delta.get("reasoning_content"):
            self.reasoning.append(delta["reasoning_content"])
        for i, call in enumerate(delta.get("tool_calls") or []):
            whole = self.calls.setdefault(int(call.get("index", i)), {"function": {"name": "", "arguments": ""}})
            for key in ("id", "type"):
                if call.get(key):
                    whole[key] = call[key]
            function = call.get("function") or {}
            whole["function"]["name"] += function.get("name") or ""
            whole["function"]["arguments"] += function.get("arguments") or ""
        self.finish_reason = part.get("finish_reason") or self.finish_reason

    def whole(self, index: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [{"type": "function", **call} for _, call in sorted(self.calls.items())]
        return {"index": index, "message": message, "finish_reason": self.finish_reason}
