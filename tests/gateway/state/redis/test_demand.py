"""Demand shared through a real redis-server: two gateways' traffic sums to the fleet's, each
second's hash expires with the model's horizon, and a Redis that does not answer says so
(the gauge then keeps its last reading: ``tests/gateway/flow/test_fleet.py``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from gateway.state.demand import InMemoryDemand
from gateway.state.redis.demand import SharedDemand
from gateway.state.redis.link import LinkSettings, RedisLink, StoreUnavailable
from serving.ports import free_port
from tests.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def test_two_gateways_traffic_sums_to_the_fleets_as_one_store_would_count_it(redis: RedisServer) -> None:
    async def scenario() -> None:
        prefix, clock = f"t{uuid.uuid4().hex[:8]}:", Clock(1_000_000.0)
        links = [RedisLink(LinkSettings(redis.url, timeout_s=1.0)) for _ in range(2)]
        gateways = [SharedDemand(link, prefix=prefix, clock=clock) for link in links]
        alone = InMemoryDemand(clock)  # what one gateway seeing all of the traffic counts
        for link in links:
            link.start()
        try:
            for second in range(30):  # gateway 0: 3 chat a second; gateway 1: 1 chat and 1 coding
                for i in range(3):
                    clock.at = 1_000_000.0 + second + i * 0.3
                    gateways[0].arrived("m", "chat", 100, 120.0)
                    alone.arrived("m", "chat", 100, 120.0)
                for store in (gateways[1], alone):
                    store.arrived("m", "chat", 500, 120.0)
                    store.arrived("m", "coding", 800, 120.0)
                    store.answered("m", "coding", 60, 120.0)
                gateways[second % 2].flush()  # now and then, as the background flush does
            gateways[1].flush()
            clock.at += 0.5
            windows = (10.0, 120.0)
            # Each gateway's counts reach Redis through its own link, fire and forget: a read on a
            # link returns after that link's sends, so one read per gateway first makes every count
            # land (else gateway 0 may read before gateway 1's last flush arrives, seen under load).
            for store in gateways:
                await store.demand("m", windows, 120.0)
            read = [await store.demand("m", windows, 120.0) for store in (*gateways, alone)]
            assert read[0] == read[1]  # every gateway reads the fleet's demand
            (short, long), expected = read[0], read[2]
            assert short["chat"].rate_per_s == pytest.approx(4.0, rel=0.1)
            assert short["coding"].rate_per_s == pytest.approx(1.0, rel=0.1)
            assert long["chat"].prompt_tokens == pytest.approx(200.0)
            assert long["coding"].output_tokens == 60
            assert read[0] == expected, "the sums read back as one store counting it all"
            ttl = await links[0].client.ttl(f"{prefix}demand:m:1000010")
            assert 120 <= ttl <= 122  # a second is kept for the horizon, not forever
        finally:
            for link in links:
                await link.aclose()

    asyncio.run(scenario())


def test_a_redis_that_does_not_answer_is_store_unavailable_and_counts_wait() -> None:
    async def scenario() -> None:
        link = RedisLink(LinkSettings(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.2))
        link.start()
        try:
            await link.connect()  # nobody there: the link is down and backs off
            store = SharedDemand(link, prefix="t:")
            store.arrived("m", "chat", 100, 120.0)
            with pytest.raises(StoreUnavailable):
                await store.demand("m", (10.0, 120.0), 120.0)
        finally:
            await link.aclose()

    asyncio.run(scenario())
