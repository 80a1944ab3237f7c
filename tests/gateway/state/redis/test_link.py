"""RedisLink against a real redis-server: replies, script reloads, failing fast while Redis is
away, and queued writes surviving an outage."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.state.redis.link import LinkSettings, RedisLink, Script, StoreUnavailable
from tests.redis_server import RedisServer

INCR = Script("incr", "return redis.call('INCR', KEYS[1])")


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(persist_dir=tmp_path) as server:
        yield server


async def until_up(link: RedisLink, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not link.up:
        assert time.monotonic() < deadline, "link did not come back"
        await asyncio.sleep(0.02)


def test_concurrent_calls_all_get_their_own_reply_in_order(redis: RedisServer) -> None:
    async def main() -> list[int]:
        link = RedisLink(LinkSettings(redis.url, timeout_s=1.0))
        link.start()
        try:
            return list(await asyncio.gather(*(link.call(INCR, ["n"], []) for _ in range(50))))
        finally:
            await link.aclose()

    assert asyncio.run(main()) == list(range(1, 51))  # one queue, one connection: queued order


def test_scripts_forgotten_by_redis_are_loaded_again(redis: RedisServer) -> None:
    async def main() -> tuple[int, int]:
        link = RedisLink(LinkSettings(redis.url, timeout_s=1.0))
        link.start()
        try:
            first = await link.call(INCR, ["s"], [])
            await link.client.script_flush()
            return first, await link.call(INCR, ["s"], [])
        finally:
            await link.aclose()

    assert asyncio.run(main()) == (1, 2)


def test_calls_fail_fast_while_redis_is_down_and_queued_writes_arrive_after(redis: RedisServer) -> None:
    key = f"w{uuid.uuid4().hex}"

    async def main() -> bytes | None:
        # Back-off from 0.5 s: the call right after a failure surely falls inside it, even on a
        # machine that stalls this process for a while (what is checked is that it does no I/O).
        link = RedisLink(LinkSettings(redis.url, timeout_s=1.0, min_backoff_s=0.5))
        link.start()
        try:
            await link.call(INCR, [key], [])
            redis.kill()
            with pytest.raises(StoreUnavailable):
                await link.call(INCR, [key], [])
            with pytest.raises(StoreUnavailable, match="backing off"):  # refused before any I/O
                await link.call(INCR, [key], [])
            for _ in range(5):
                link.send(INCR, [key], [])
            await asyncio.sleep(1.6)  # probes fail meanwhile (at 0.5 s, then 1.5 s); the writes stay queued
            redis.start()
            await until_up(link)
            deadline = time.monotonic() + 5
            while (value := await link.client.get(key)) != b"6" and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            return value
        finally:
            await link.aclose()

    assert asyncio.run(main()) == b"6"
