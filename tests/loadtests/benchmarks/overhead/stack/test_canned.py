"""The backend's canned answers and the request bodies: vLLM 0.32's shapes for chat, the Responses API and Messages."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests.benchmarks.overhead.stack.canned import CONTENT_TOKENS, canned_responses, request_body


def test_stream_is_vllm_shaped_role_tokens_finish_usage_done() -> None:
    events = canned_responses().chat_sse_events
    payloads = [json.loads(e[len(b"data: "):]) for e in events[:-1]]
    assert payloads[0]["choices"][0]["delta"]["role"] == "assistant"
    assert payloads[-2]["choices"][0]["finish_reason"] == "stop"
    assert payloads[-1]["choices"] == [] and payloads[-1]["usage"]["completion_tokens"] == len(CONTENT_TOKENS)
    assert 16 <= len(events) <= 32


def test_request_bodies_ask_for_the_logical_model_and_usage_when_streaming() -> None:
    stream = json.loads(request_body(True))
    assert stream["model"] == "smollm2" and stream["stream"] is True
    assert stream["stream_options"] == {"include_usage": True}
    assert "stream" not in json.loads(request_body(False))


FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "vllm_cpu" / "apis"


def _sse_events(body: bytes) -> list[dict[str, object]]:
    return [json.loads(line[len(b"data:"):]) for line in body.splitlines() if line.startswith(b"data:")]


def test_canned_responses_answers_have_the_fields_vllm_032_sends() -> None:
    canned = canned_responses()
    captured = json.loads((FIXTURES / "responses_nonstream.json").read_text())
    answer = json.loads(canned.responses_json)
    assert list(answer) == list(captured)
    assert list(answer["output"][0]) == list(captured["output"][0])
    assert answer["usage"]["output_tokens"] == len(CONTENT_TOKENS)


def test_canned_responses_stream_is_the_event_sequence_vllm_032_sends() -> None:
    """The captured stream's event types and each event's fields, token deltas collapsed to one."""

    def shape(events: list[dict[str, object]]) -> list[tuple[str, frozenset[str]]]:
        kinds = [(str(e["type"]), frozenset(e)) for e in events]
        return [k for i, k in enumerate(kinds) if i == 0 or k[0] != "response.output_text.delta" or kinds[i - 1] != k]

    ours = _sse_events(b"".join(canned_responses().responses_sse_events))
    captured = _sse_events((FIXTURES / "responses_stream.sse").read_bytes())
    assert shape(ours) == shape(captured)
    assert [e["sequence_number"] for e in ours] == list(range(len(ours)))
    assert all(event.startswith(b"event: ") for event in canned_responses().responses_sse_events)


def test_responses_request_body_asks_the_logical_model_for_the_same_tokens() -> None:
    from loadtests.benchmarks.overhead.stack.canned import responses_request_body

    stream = json.loads(responses_request_body(True))
    assert stream["model"] == "smollm2" and stream["stream"] is True
    assert stream["max_output_tokens"] == len(CONTENT_TOKENS) and isinstance(stream["input"], str)
    assert "stream" not in json.loads(responses_request_body(False))


def test_canned_messages_answers_have_the_shape_vllm_032_sends() -> None:
    canned = canned_responses()
    captured = json.loads((FIXTURES / "messages_nonstream.json").read_text())
    assert list(json.loads(canned.messages_json)) == list(captured)

    def kinds(events: list[dict[str, object]]) -> list[tuple[str, frozenset[str]]]:
        shape = [(str(e["type"]), frozenset(e)) for e in events]
        return [k for i, k in enumerate(shape) if i == 0 or k[0] != "content_block_delta" or shape[i - 1] != k]

    ours = _sse_events(b"".join(canned.messages_sse_events))
    assert kinds(ours) == kinds(_sse_events((FIXTURES / "messages_stream.sse").read_bytes()))
    assert list(ours[0]["message"]) == list(_sse_events((FIXTURES / "messages_stream.sse").read_bytes())[0]["message"])
