"""Which session a request belongs to: the header, the user fields, or its first messages; and
whether it continues its session."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.endpoints import ChatBody, CompletionBody, validate_body
from gateway.sessions.session_id import continues, session_key


def chat(messages: list[dict[str, Any]], **extra: Any) -> ChatBody:
    _, body = validate_body({"model": "smollm2", "messages": messages, **extra}, ChatBody)
    assert isinstance(body, ChatBody)
    return body


SYSTEM = {"role": "system", "content": "You are terse."}
FIRST = {"role": "user", "content": "What is a KV cache?"}


@pytest.mark.parametrize(("body", "headers", "expected"), [
    (chat([FIRST]), {"x-session-id": "s-1"}, "smollm2\x1fh:s-1"),
    (chat([FIRST], user="alice"), {}, "smollm2\x1fu:alice"),
    (chat([FIRST], safety_identifier="hashed-alice"), {}, "smollm2\x1fu:hashed-alice"),
    (chat([FIRST], user="alice"), {"x-session-id": "s-1"}, "smollm2\x1fh:s-1"),  # the header first
])
def test_a_claimed_session_id_comes_from_the_header_then_the_user_fields(body, headers, expected):
    assert session_key(body, headers, "smollm2") == expected


def test_a_conversation_without_a_claimed_id_is_told_by_its_first_messages():
    turn1 = chat([SYSTEM, FIRST])
    turn5 = chat([SYSTEM, FIRST, {"role": "assistant", "content": "A store."}, {"role": "user", "content": "More?"}])
    other = chat([SYSTEM, {"role": "user", "content": "Another topic"}])
    assert session_key(turn1, {}, "m") == session_key(turn5, {}, "m") is not None
    assert session_key(other, {}, "m") != session_key(turn1, {}, "m")
    assert session_key(chat([SYSTEM]), {}, "m") is None  # no user message yet: nothing to tell it by


def test_a_completion_has_no_conversation_to_hash():
    _, body = validate_body({"model": "smollm2", "prompt": "hello"}, CompletionBody)
    assert session_key(body, {}, "smollm2") is None


@pytest.mark.parametrize(("body", "headers", "continuing"), [
    (chat([SYSTEM, FIRST]), {}, False),  # a canned opening many clients share: routed freely
    (chat([SYSTEM, FIRST, {"role": "assistant", "content": "A store."}, {"role": "user", "content": "More?"}]), {},
     True),
    (chat([FIRST]), {"x-session-id": "s-1"}, True),  # a claimed session continues from its first request
    (chat([FIRST], user="alice"), {}, True),
])
def test_only_a_continuing_request_is_held_to_its_seat(body, headers, continuing):
    assert continues(body, headers) is continuing
