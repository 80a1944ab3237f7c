"""The one background flush of the stream-shared copies (prefix index, sessions' seats): a capped
outbox, and a sync run every refresh that survives Redis being away and says so once."""

from __future__ import annotations

import asyncio
import logging

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from gateway.state.redis.flush import Flusher, Outbox


def test_the_outbox_keeps_the_newest_entries_up_to_its_limit(caplog: pytest.LogCaptureFixture) -> None:
    outbox: Outbox[int] = Outbox(3, "test copy")
    for entry in range(5):
        outbox.post(entry)
    assert (len(outbox), outbox.pending()) == (3, [2, 3, 4])
    assert "test copy: Redis is behind, 1 oldest entries not shared" in caplog.text


def test_what_was_sent_leaves_and_what_was_posted_meanwhile_waits() -> None:
    outbox: Outbox[str] = Outbox(10, "test copy")
    outbox.post("a")
    sending = outbox.pending()
    outbox.post("b")  # posted while the sync is on its way
    outbox.sent(len(sending))
    assert outbox.pending() == ["b"]


def test_the_flusher_keeps_syncing_through_failures_and_logs_each_change_once(caplog: pytest.LogCaptureFixture) -> None:
    outcomes = [RedisConnectionError("down"), OSError("down"), None, None]
    calls: list[int] = []

    async def sync() -> None:
        calls.append(1)
        if (error := outcomes[min(len(calls), len(outcomes)) - 1]) is not None:
            raise error

    async def scenario() -> None:
        flusher = Flusher(sync, 0.001, what="test copy", meanwhile="local only")
        flusher.start()
        while len(calls) < len(outcomes):
            await asyncio.sleep(0.001)
        await flusher.aclose()
        assert not flusher.failing

    with caplog.at_level(logging.INFO, logger="gateway.state.redis.flush"):
        asyncio.run(scenario())
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["test copy: cannot share through Redis (down); local only", "test copy: Redis answers again"]
