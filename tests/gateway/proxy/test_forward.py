"""One attempt on one replica: a retryable status is a failure the director can move on from, an
answer carries its replica and body. (The attempt loop and its bookkeeping: tests/gateway/flow.)"""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.domain import Replica
from gateway.outcome import AttemptFailure
from gateway.proxy.forward import Answer, UpstreamCall, UpstreamRequest

REFUSING = Replica("m/fast/0", "m", "fast", "http://refusing.invalid")
ANSWERING = Replica("m/fast/1", "m", "fast", "http://answering.invalid")


class _Response:
    """What the attempt loop reads of a pooled HTTP/1.1 response (gateway.proxy.http1.Response)."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self._body = body

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Pool:
    """A replica at ``REFUSING``'s URL answers 503, any other 200: a real pool needs sockets."""

    def __init__(self) -> None:
        self.posted: list[str] = []
        self.bodies: list[bytes] = []

    async def post(self, base_url: str, path: str, body: bytes, headers: bytes = b"") -> Any:
        self.posted.append(base_url)
        self.bodies.append(body)
        return _Response(503, b"overloaded") if base_url == REFUSING.url else _Response(200, b"{}")


def _call(pool: _Pool) -> UpstreamCall:
    return UpstreamCall(pool, UpstreamRequest("/v1/chat/completions", lambda r: r.id.encode(), b"", False))  # type: ignore[arg-type]


def test_a_retryable_status_is_a_failure_that_names_the_replica_and_keeps_the_detail() -> None:
    failure = asyncio.run(_call(_Pool()).attempt(REFUSING))
    assert isinstance(failure, AttemptFailure)
    assert (failure.replica_id, failure.status, failure.detail) == (REFUSING.id, 503, "overloaded")


def test_an_answer_carries_the_replica_and_its_whole_body_and_each_replica_gets_its_own_body() -> None:
    pool = _Pool()
    answer = asyncio.run(_call(pool).attempt(ANSWERING))
    assert isinstance(answer, Answer)
    assert (answer.replica, answer.status, answer.body) == (ANSWERING, 200, b"{}")
    assert pool.bodies == [ANSWERING.id.encode()]
