"""A whole chat completion written as vLLM's SSE stream carries the same message back."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.proxy.whole_stream import completion_events

COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 7, "model": "smollm2",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]}},
        {"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello"}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
}


def events(include_usage: bool) -> list[Any]:
    text = completion_events(orjson.dumps(COMPLETION), include_usage)
    assert text.endswith(b"data: [DONE]\n\n")
    blocks = text.split(b"\n\n")[:-2]
    assert all(b.startswith(b"data: ") for b in blocks)
    return [orjson.loads(b[6:]) for b in blocks]


def test_the_stream_rebuilds_each_choice_and_ends_with_its_finish_reason() -> None:
    chunks = events(include_usage=False)
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and {c["id"] for c in chunks} == {"chatcmpl-1"}
    deltas: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        (choice,) = chunk["choices"]
        merged = deltas.setdefault(choice["index"], {"content": "", "tool_calls": [], "finish": None})
        merged["content"] += choice["delta"].get("content") or ""
        merged["tool_calls"] += choice["delta"].get("tool_calls", [])
        merged["finish"] = choice["finish_reason"] or merged["finish"]
    assert deltas[0]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}
    assert deltas[0]["finish"] == "tool_calls"
    assert deltas[1] == {"content": "Hello", "tool_calls": [], "finish": "stop"}


def test_usage_comes_last_and_only_when_asked_for() -> None:
    assert events(include_usage=True)[-1] == {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7,
                                              "model": "smollm2", "choices": [], "usage": COMPLETION["usage"]}
    assert all("usage" not in c for c in events(include_usage=False))
