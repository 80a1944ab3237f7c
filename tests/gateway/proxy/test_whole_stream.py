"""A whole chat completion written as vLLM's SSE stream carries the same message back, and a
stream adds up to the whole completion its deltas make (what a shadow check scores)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.proxy.whole_stream import completion_events, stream_completion

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


def sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_a_stream_adds_up_to_the_completion_it_was_written_from() -> None:
    whole = stream_completion(completion_events(orjson.dumps(COMPLETION), include_usage=True))
    assert whole["choices"] == COMPLETION["choices"]
    assert (whole["id"], whole["model"], whole["usage"]) == ("chatcmpl-1", "smollm2", COMPLETION["usage"])


def test_tool_call_fragments_are_joined_per_call_in_order() -> None:
    """As vLLM streams tool calls: the first delta of a call names it, later ones carry pieces of
    its arguments; two calls interleave by index."""
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}

    def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

    stream = sse(
        delta({"role": "assistant", "content": ""}),
        delta({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "get", "arguments": ""}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        delta({"tool_calls": [{"index": 1, "id": "b", "type": "function", "function": {"name": "put", "arguments": "{}"}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]}),
        delta({}, "tool_calls"),
    )
    (choice,) = stream_completion(stream)["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {"type": "function", "id": "a", "function": {"name": "get", "arguments": '{"city": "Oslo"}'}},
        {"type": "function", "id": "b", "function": {"name": "put", "arguments": "{}"}}]


def test_content_pieces_are_joined_and_a_cut_stream_is_refused() -> None:
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    pieces = [{**head, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
              for word in ("The ", "tide ", "turns.")]
    assert stream_completion(sse(*pieces))["choices"][0]["message"]["content"] == "The tide turns."
    cut = sse(*pieces).replace(b"data: [DONE]", b'data: {"error": {"message": "cut"}}')
    with pytest.raises(ValueError):
        stream_completion(cut)
