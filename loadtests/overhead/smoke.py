"""One real request through a gateway, checked against the canned answer.

A gateway counts as ready only when this passes (Duet, for one, routes nothing until its
health loop has seen the replica up), and a mangled pass-through fails the run before any
number is taken: wrk only counts status codes.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from loadtests.overhead.canned import API_KEY, CONTENT_TOKENS, request_body

EXPECTED_TEXT = "".join(CONTENT_TOKENS).strip()


def post_chat(base_url: str, stream: bool, timeout_s: float = 10.0) -> tuple[int, bytes]:
    """POST the benchmark's chat request to ``base_url``; return the status and the whole body."""
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    try:
        connection.request("POST", "/v1/chat/completions", body=request_body(stream), headers={
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


def smoke_problem(base_url: str, stream: bool) -> str | None:
    """Send one request; return what is wrong with the answer, or ``None`` if it is right."""
    try:
        status, body = post_chat(base_url, stream)
    except OSError as error:
        return f"request failed: {error!r}"
    if status != 200:
        return f"status {status}: {body[:300]!r}"
    return stream_problem(body) if stream else non_stream_problem(body)
