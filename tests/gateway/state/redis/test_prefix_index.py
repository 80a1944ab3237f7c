"""The shared prefix index against a real redis-server: two gateways on one Redis see the same
index, a late gateway catches up, forgetting travels too, a restart one gateway sees makes every
gateway treat the replica as cold (and late entries about its old process are dropped), and Redis
away leaves routing on the gateway's own index."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import pytest

from gateway.domain import Health, ReplicaState
from gateway.state.prefix_blocks import text_block_ids
from gateway.state.redis.link import LinkSettings, RedisLink
from gateway.state.redis.prefix_index import SharedPrefixIndex
from tests.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@asynccontextmanager
async def gateways(url: str, count: int, prefix: str | None = None) -> AsyncIterator[list[SharedPrefixIndex]]:
    """``count`` indexes sharing one fresh prefix, as ``count`` gateways would."""
    prefix = prefix or f"t{uuid.uuid4().hex[:8]}:"
    links = [RedisLink(LinkSettings(url, timeout_s=1.0)) for _ in range(count)]
    made = [SharedPrefixIndex(link, 1000, gateway_id=f"gw{i}-{uuid.uuid4().hex[:6]}", prefix=prefix, refresh_s=0.01)
            for i, link in enumerate(links)]
    for index in made:
        index.start()
    try:
        yield made
    finally:
        for index, link in zip(made, links, strict=True):
            await index.aclose()
            await link.aclose()


async def until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s")
        await asyncio.sleep(0.005)


PROMPT = text_block_ids("system: be brief. user: " + "tell me about prefix caches " * 60, 16)


def test_two_gateways_on_one_redis_see_the_same_index(redis: RedisServer) -> None:
    async def scenario() -> None:
        async with gateways(redis.url, 2) as (a, b):
            assert b.cached_blocks("r1", PROMPT) == 0
            a.learn("r1", PROMPT)
            await until(lambda: b.cached_blocks("r1", PROMPT) == len(PROMPT))
            assert b.cached_blocks("r2", PROMPT) == 0
            b.learn("r2", PROMPT[:3])
            await until(lambda: a.cached_blocks("r2", PROMPT) == 3)
            a.forget("r1")  # a restart one gateway saw
            await until(lambda: b.cached_blocks("r1", PROMPT) == 0)
    asyncio.run(scenario())


def test_a_gateway_that_starts_later_catches_up_from_the_stream(redis: RedisServer) -> None:
    async def scenario() -> None:
        prefix = f"t{uuid.uuid4().hex[:8]}:"
        async with gateways(redis.url, 1, prefix) as (early,):
            early.learn("r1", PROMPT)
            await until(lambda: not early._outbox)
            async with gateways(redis.url, 1, prefix) as (late,):
                await until(lambda: late.cached_blocks("r1", PROMPT) == len(PROMPT))
    asyncio.run(scenario())


def up(started_at: float | None, health: Health = Health.UP) -> dict[str, ReplicaState]:
    return {"r1": ReplicaState("r1", health=health, started_at=started_at)}


def test_a_restart_one_gateway_sees_makes_every_gateway_treat_the_replica_as_cold(redis: RedisServer) -> None:
    """A sees vLLM's start time change; B, whose requests never showed it, forgets too. A's own
    new learning after the restart survives B seeing the same restart later (same epoch)."""
    async def scenario() -> None:
        async with gateways(redis.url, 2) as (a, b):
            old_start = time.time() - 3600
            a.watch(up(old_start))
            b.watch(up(old_start))
            b.learn("r1", PROMPT)
            await until(lambda: a.cached_blocks("r1", PROMPT) == len(PROMPT))
            new_start = time.time()
            a.watch(up(new_start))  # A's monitor scraped the restarted replica
            assert a.cached_blocks("r1", PROMPT) == 0
            await until(lambda: b.cached_blocks("r1", PROMPT) == 0)
            assert a.epoch("r1") == b.epoch("r1") == new_start
            await asyncio.sleep(0.01)
            a.learn("r1", PROMPT[:2])  # dispatched to the new process: warm again, on both
            await until(lambda: b.cached_blocks("r1", PROMPT) == 2)
            b.watch(up(new_start))  # B's snapshot now shows the same restart: nothing new to forget
            await asyncio.sleep(0.1)
            assert (a.cached_blocks("r1", PROMPT), b.cached_blocks("r1", PROMPT)) == (2, 2)
    asyncio.run(scenario())


def test_down_then_up_seen_by_one_gateway_reaches_the_others(redis: RedisServer) -> None:
    async def scenario() -> None:
        async with gateways(redis.url, 2) as (a, b):
            a.watch(up(None))
            b.learn("r1", PROMPT)
            await until(lambda: a.cached_blocks("r1", PROMPT) == len(PROMPT))
            a.watch(up(None, Health.DOWN))
            a.watch(up(None))  # back up: a restart without a start time to show it
            await until(lambda: b.cached_blocks("r1", PROMPT) == 0)
            assert a.cached_blocks("r1", PROMPT) == 0
    asyncio.run(scenario())


def test_entries_about_the_old_process_sent_after_the_restart_are_dropped(redis: RedisServer) -> None:
    """C dispatched to r1 before it restarted but syncs only afterwards (a slow gateway): what it
    learned must not make the new, cold process look warm, on A or on a gateway starting later."""
    async def scenario() -> None:
        prefix = f"t{uuid.uuid4().hex[:8]}:"
        async with gateways(redis.url, 1, prefix) as (a,):
            link = RedisLink(LinkSettings(redis.url, timeout_s=1.0))
            slow = SharedPrefixIndex(link, 1000, gateway_id="slow", prefix=prefix)  # not started: syncs by hand
            try:
                slow.learn("r1", PROMPT)  # the old process
                await asyncio.sleep(0.01)
                a.watch(up(time.time() - 3600))
                a.watch(up(time.time()))  # restarted after C's dispatch
                await until(lambda: not a._outbox)
                await asyncio.sleep(0.01)
                slow.learn("r2", PROMPT)  # learned after the restart, about another replica: kept
                await slow.sync()  # C's late entries arrive after the restart's
                await until(lambda: a.cached_blocks("r2", PROMPT) == len(PROMPT))
                assert a.cached_blocks("r1", PROMPT) == 0
                assert slow.cached_blocks("r1", PROMPT) == 0  # C read the epoch in the same sync
                async with gateways(redis.url, 1, prefix) as (late,):
                    await until(lambda: late.cached_blocks("r2", PROMPT) == len(PROMPT))
                    assert late.cached_blocks("r1", PROMPT) == 0
            finally:
                await link.aclose()
    asyncio.run(scenario())


def test_without_redis_the_gateway_routes_on_its_own_index() -> None:
    async def scenario() -> None:
        link = RedisLink(LinkSettings("redis://127.0.0.1:1/0", timeout_s=0.05))  # nothing listens on port 1
        index = SharedPrefixIndex(link, 100, gateway_id="gw", prefix="t:", refresh_s=0.01, timeout_s=0.05)
        index.start()
        try:
            index.learn("r1", PROMPT)
            await asyncio.sleep(0)  # let the sync task try
            assert index.cached_blocks("r1", PROMPT) == len(PROMPT)  # the outbox's bound: test_flush.py
        finally:
            await index.aclose()
            await link.aclose()
    asyncio.run(scenario())
