"""The attempt loop's bookkeeping: a refused attempt leaves neither the prefill backlog nor the
decode ledger behind, and the attempt that answers stays in the ledger under its ticket."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.domain import Replica
from gateway.proxy.forward import Forwarder
from gateway.state.decodes import DecodeClaim, DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore, StoreSettings

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

    async def post(self, base_url: str, path: str, body: bytes, headers: bytes = b"") -> Any:
        self.posted.append(base_url)
        return _Response(503, b"overloaded") if base_url == REFUSING.url else _Response(200, b"{}")


def test_a_refused_attempt_leaves_no_ledger_entry_and_the_answer_keeps_its_own() -> None:
    backlog, decodes, pool = PrefillBacklog(), DecodeLedger(), _Pool()
    forwarder = Forwarder(pool, InMemoryStateStore(StoreSettings()), 3, backlog, decodes)  # type: ignore[arg-type]
    claim = DecodeClaim(slack_ms={REFUSING.id: 120.0, ANSWERING.id: 80.0}, prefill_ms={REFUSING.id: 5.0, ANSWERING.id: 5.0})
    answer = asyncio.run(forwarder.send([REFUSING, ANSWERING], "/v1/chat/completions", lambda r: b"{}", b"", False, 50, claim))
    assert pool.posted == [REFUSING.url, ANSWERING.url]
    assert (answer.replica, answer.status, answer.failed_attempts) == (ANSWERING, 200, 1)
    assert dict(decodes.least_slack) == {ANSWERING.id: 80.0}
    assert dict(backlog.tokens) == {}
    assert answer.decode_ticket is not None
    assert decodes.done(ANSWERING.id, answer.decode_ticket) == 0.0
    assert dict(decodes.least_slack) == {}
