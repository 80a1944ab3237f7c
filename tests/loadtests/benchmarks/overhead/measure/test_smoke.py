"""The smoke checks accept the canned answers and catch damage, for every API."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests.benchmarks.overhead.measure.smoke import non_stream_problem, stream_problem
from loadtests.benchmarks.overhead.stack.backend import render_nginx_conf
from loadtests.benchmarks.overhead.stack.canned import CONTENT_TOKENS, canned_responses


def test_smoke_checks_accept_the_canned_answers_and_catch_damage() -> None:
    canned = canned_responses()
    stream = b"".join(canned.chat_sse_events)
    assert non_stream_problem(canned.chat_json) is None
    assert stream_problem(stream) is None
    assert stream_problem(stream.replace(b"data: [DONE]\n\n", b"")) is not None
    assert stream_problem(stream.replace(CONTENT_TOKENS[3].encode(), b"")) is not None
    assert non_stream_problem(b'{"error": {"message": "no"}}') is not None


def test_responses_smoke_checks_accept_the_canned_answers_and_catch_damage() -> None:
    from loadtests.benchmarks.overhead.measure.smoke import responses_problem, responses_stream_problem

    canned = canned_responses()
    stream = b"".join(canned.responses_sse_events)
    assert responses_problem(canned.responses_json) is None
    assert responses_stream_problem(stream) is None
    assert responses_stream_problem(b"".join(canned.responses_sse_events[:-1])) is not None
    assert responses_stream_problem(stream.replace(b'"delta":"Paris "', b'"delta":""')) is not None
    assert responses_problem(canned.chat_json) is not None
    assert responses_stream_problem(b"".join(canned.chat_sse_events)) is not None


def test_messages_smoke_checks_accept_the_canned_answers_and_catch_damage(tmp_path: Path) -> None:
    from loadtests.benchmarks.overhead.measure.smoke import messages_problem, messages_stream_problem
    from loadtests.benchmarks.overhead.stack.backend import MESSAGES_HANDLER_LUA
    from loadtests.benchmarks.overhead.stack.canned import messages_request_body

    canned = canned_responses()
    stream = b"".join(canned.messages_sse_events)
    assert messages_problem(canned.messages_json) is None and messages_stream_problem(stream) is None
    assert messages_stream_problem(b"".join(canned.messages_sse_events[:-1])) is not None
    assert messages_stream_problem(stream.replace(b'"text":"Paris "', b'"text":""')) is not None
    assert messages_problem(canned.responses_json) is not None
    assert "location = /v1/messages" in render_nginx_conf(tmp_path, 18999)
    assert "canned.messages_events" in MESSAGES_HANDLER_LUA
    body = json.loads(messages_request_body(True))
    assert body["max_tokens"] == len(CONTENT_TOKENS) and body["stream"] is True and body["messages"]
