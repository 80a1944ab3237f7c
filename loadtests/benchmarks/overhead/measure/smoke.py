"""One real request through a gateway, checked against the canned answer.

A gateway counts as ready only when this passes (Duet, for one, routes nothing until its
health loop has seen the replica up), and a mangled pass-through fails the run before any
number is taken: wrk only counts status codes.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from loadtests.benchmarks.overhead.measure.modes import CHAT_MODES, Mode
from loadtests.benchmarks.overhead.stack.canned import (
    API_KEY,
    CONTENT_TOKENS,
    messages_request_body,
    request_body,
    responses_request_body,
)

EXPECTED_TEXT = "".join(CONTENT_TOKENS).strip()


def mode_body(mode: Mode) -> bytes:
    """The request body every gateway receives in ``mode``."""
    bodies = {"responses": responses_request_body, "messages": messages_request_body}
    return bodies.get(mode.api, request_body)(mode.stream)


def post_chat(base_url: str, stream: bool, timeout_s: float = 10.0, mode: Mode | None = None) -> tuple[int, bytes]:
    """POST the benchmark's request in ``mode`` (chat, streamed as ``stream`` says, by default) to
    ``base_url``; return the status and the whole body."""
    mode = mode or CHAT_MODES[int(stream)]
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    try:
        connection.request("POST", mode.path, body=mode_body(mode), headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def non_stream_problem(body: bytes) -> str | None:
    """What is wrong with a non-stream answer, or ``None`` if it carries the canned text."""
    try:
        content = json.loads(body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        return f"not a chat.completion ({error!r}): {body[:200]!r}"
    if content.strip() != EXPECTED_TEXT:
        return f"content {content!r} != {EXPECTED_TEXT!r}"
    return None


def stream_problem(body: bytes) -> str | None:
    """What is wrong with an SSE answer, or ``None`` if its deltas rebuild the canned text and
    it ends with ``data: [DONE]``."""
    payloads = [line[len(b"data:"):].strip() for line in body.splitlines() if line.startswith(b"data:")]
    if not payloads or payloads[-1] != b"[DONE]":
        return f"stream does not end with data: [DONE]: {body[-200:]!r}"
    text = ""
    try:
        for payload in payloads[:-1]:
            for choice in json.loads(payload).get("choices", []):
                text += choice.get("delta", {}).get("content") or ""
    except (ValueError, AttributeError) as error:
        return f"unparsable SSE event ({error!r})"
    if text.strip() != EXPECTED_TEXT:
        return f"streamed content {text!r} != {EXPECTED_TEXT!r}"
    return None


def responses_problem(body: bytes) -> str | None:
    """What is wrong with a non-stream Responses answer, or ``None`` if it carries the canned text."""
    try:
        text = json.loads(body)["output"][0]["content"][0]["text"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        return f"not a response ({error!r}): {body[:200]!r}"
    if text.strip() != EXPECTED_TEXT:
        return f"text {text!r} != {EXPECTED_TEXT!r}"
    return None


def responses_stream_problem(body: bytes) -> str | None:
    """What is wrong with a Responses stream, or ``None`` if its ``response.output_text.delta``
    events rebuild the canned text and it ends with ``response.completed``."""
    try:
        events = [json.loads(line[len(b"data:"):]) for line in body.splitlines() if line.startswith(b"data:")]
        kinds = [event["type"] for event in events]
        text = "".join(event["delta"] for event in events if event["type"] == "response.output_text.delta")
    except (ValueError, KeyError, TypeError) as error:
        return f"unparsable Responses event ({error!r}): {body[:200]!r}"
    if not kinds or kinds[-1] != "response.completed":
        return f"stream does not end with response.completed: {body[-200:]!r}"
    if text.strip() != EXPECTED_TEXT:
        return f"streamed text {text!r} != {EXPECTED_TEXT!r}"
    return None


def messages_problem(body: bytes) -> str | None:
    """What is wrong with a non-stream Messages answer, or ``None`` if it carries the canned text."""
    try:
        text = json.loads(body)["content"][0]["text"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        return f"not a message ({error!r}): {body[:200]!r}"
    if text.strip() != EXPECTED_TEXT:
        return f"text {text!r} != {EXPECTED_TEXT!r}"
    return None


def messages_stream_problem(body: bytes) -> str | None:
    """What is wrong with a Messages stream, or ``None`` if its ``text_delta`` blocks rebuild the
    canned text and it ends with ``message_stop``."""
    try:
        events = [json.loads(line[len(b"data:"):]) for line in body.splitlines() if line.startswith(b"data:")]
        kinds = [event["type"] for event in events]
        text = "".join(event["delta"]["text"] for event in events if event["type"] == "content_block_delta")
    except (ValueError, KeyError, TypeError) as error:
        return f"unparsable Messages event ({error!r}): {body[:200]!r}"
    if not kinds or kinds[-1] != "message_stop":
        return f"stream does not end with message_stop: {body[-200:]!r}"
    if text.strip() != EXPECTED_TEXT:
        return f"streamed text {text!r} != {EXPECTED_TEXT!r}"
    return None


def answer_problem(mode: Mode, body: bytes) -> str | None:
    """What is wrong with a 200 answer's ``body`` in ``mode``, or ``None``."""
    if mode.api == "responses":
        return responses_stream_problem(body) if mode.stream else responses_problem(body)
    if mode.api == "messages":
        return messages_stream_problem(body) if mode.stream else messages_problem(body)
    return stream_problem(body) if mode.stream else non_stream_problem(body)


def smoke_problem(base_url: str, stream: bool, mode: Mode | None = None) -> str | None:
    """Send one request (in ``mode``; chat by default); return what is wrong with the answer, or
    ``None`` if it is right."""
    mode = mode or CHAT_MODES[int(stream)]
    try:
        status, body = post_chat(base_url, mode.stream, mode=mode)
    except OSError as error:
        return f"request failed: {error!r}"
    if status != 200:
        return f"status {status}: {body[:300]!r}"
    return answer_problem(mode, body)
