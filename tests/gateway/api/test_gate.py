"""The gate's route table (exact, templated, HEAD as GET, the key-needing default) and its
chunked-body cap; tests/integration/test_security.py runs every route through a live gateway."""

from __future__ import annotations

import asyncio

import pytest

from gateway.api.asgi import Message
from gateway.api.gate import ROUTES, Guard, _framing, _read_capped
from gateway.errors import BodyTooLarge


@pytest.mark.parametrize(("method", "path", "guard"), [
    ("POST", "/v1/chat/completions", Guard.KEY),
    ("GET", "/health", Guard.OPEN),
    ("HEAD", "/health", Guard.OPEN),
    ("DELETE", "/admin/keys/key_abc", Guard.ADMIN),
    ("DELETE", "/admin/keys/key_abc/more", Guard.KEY),  # not the templated route: the default
    ("GET", "/metrics", Guard.METRICS),
    ("GET", "/v1/chat/completions", Guard.KEY),
    ("PUT", "/nowhere", Guard.KEY),
])
def test_routes_are_found_by_method_and_path_and_unknown_ones_need_a_key(method: str, path: str, guard: Guard) -> None:
    assert ROUTES.find(method, path).guard is guard


def messages(*pieces: bytes) -> list[Message]:
    return [{"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)]


def replay(pieces: list[Message], limit: int) -> list[Message]:
    async def main() -> list[Message]:
        queue = [*pieces, {"type": "http.disconnect"}]

        async def receive() -> Message:
            return queue.pop(0)

        capped = await _read_capped(receive, limit)
        return [await capped(), await capped()]

    return asyncio.run(main())


def test_a_chunked_body_within_the_limit_is_handed_on_whole_then_what_follows() -> None:
    first, then = replay(messages(b"ab", b"cd", b"e"), limit=5)
    assert first == {"type": "http.request", "body": b"abcde", "more_body": False}
    assert then == {"type": "http.disconnect"}


def test_a_chunked_body_past_the_limit_is_refused_while_reading() -> None:
    with pytest.raises(BodyTooLarge):
        replay(messages(b"abc", b"def", b"never read"), limit=5)


@pytest.mark.parametrize(("headers", "authorization"), [
    ([(b"x-api-key", b"k1")], "Bearer k1"),  # Anthropic's clients
    ([(b"authorization", b"Bearer k2"), (b"x-api-key", b"k1")], "Bearer k2"),
    ([], None),
])
def test_an_x_api_key_is_taken_as_the_bearer_key_unless_authorization_came_first(headers, authorization) -> None:
    assert _framing(headers)[2] == authorization
