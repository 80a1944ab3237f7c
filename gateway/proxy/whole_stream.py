"""A whole chat completion written as the SSE stream vLLM would have sent: for a streamed request
whose answer the gateway held back to check it (``gateway.flow.escalation``).

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
