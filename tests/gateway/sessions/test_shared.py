"""Session seats shared through a real redis-server: a conversation's next turn on another
gateway finds where the last one sat."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from gateway.sessions.seats import Seat
from gateway.sessions.shared import SharedSessions
from gateway.state.redis.link import LinkSettings, RedisLink
from tests.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


async def until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s")
        await asyncio.sleep(0.005)


def test_two_gateways_on_one_redis_see_the_same_seats(redis: RedisServer) -> None:
    async def scenario() -> None:
        prefix = f"t{uuid.uuid4().hex[:8]}:"
        links = [RedisLink(LinkSettings(redis.url, timeout_s=1.0)) for _ in range(2)]
        a, b = (SharedSessions(link, 100, gateway_id=f"gw{i}", prefix=prefix, refresh_s=0.01)
                for i, link in enumerate(links))
        a.start()
        b.start()
        try:
            assert b.seat("conv") is None
            a.sit("conv", "fast", "m/fast/0")
            await until(lambda: b.seat("conv") == Seat("fast", "m/fast/0", 1))
            b.sit("conv", "standard", "m/standard/1")  # turn 2 moved up, on the other gateway
            await until(lambda: a.seat("conv") == Seat("standard", "m/standard/1", 2))
        finally:
            for index, link in ((a, links[0]), (b, links[1])):
                await index.aclose()
                await link.aclose()

    asyncio.run(scenario())
