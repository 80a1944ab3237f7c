"""Output lengths shared through a real redis-server (issue #16): the Lua script folds samples in
as ``LengthHistogram`` does, two gateways on one Redis converge on one estimate from answers only
one of them relayed, and without Redis a gateway plans with its own."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import pytest

from gateway.state.lengths import LengthHistogram, LengthSettings, OutputLengths
from gateway.state.redis import scripts
from gateway.state.redis.lengths import SharedLengths
from gateway.state.redis.link import LinkSettings, RedisLink
from gateway.state.redis.store import RedisStateStore
from gateway.state.store import StoreSettings
from tests.redis_server import RedisServer

LENGTHS = LengthSettings(quantile=0.5, min_samples=20, half_life_samples=500.0)


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@asynccontextmanager
async def gateways(url: str, count: int) -> AsyncIterator[list[RedisStateStore]]:
    """``count`` replica stores (gateways) sharing one fresh prefix, exchanging lengths often."""
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    made = [RedisStateStore(RedisLink(LinkSettings(url, timeout_s=1.0)), StoreSettings(lengths=LENGTHS),
                            gateway_id=f"gw{i}", prefix=prefix, refresh_s=0.02, lengths_sync_s=0.05)
            for i in range(count)]
    for store in made:
        await store.start()
    try:
        yield made
    finally:
        for store in made:
            await store.aclose()


async def until(predicate: Callable[[], bool], timeout_s: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("half_life", [500.0, 2.0])  # 2: the weights pass 1e100 and are rescaled
def test_the_script_folds_samples_in_as_the_python_histogram_does(redis: RedisServer, half_life: float) -> None:
    rng = random.Random(3)
    samples = [int(rng.lognormvariate(5, 1.2)) for _ in range(900)]
    expected = LengthHistogram(half_life)
    for tokens in samples:
        expected.add(tokens)

    async def scenario() -> LengthHistogram | None:
        link = RedisLink(LinkSettings(redis.url, timeout_s=1.0))
        link.start()
        shared = SharedLengths(LengthSettings(half_life_samples=half_life))
        key = f"t{uuid.uuid4().hex[:8]}:lengths"
        try:
            for start in range(0, len(samples), 128):  # in batches, as refreshes carry them
                for tokens in samples[start:start + 128]:
                    shared.add("m", "chat", tokens)
                args, _ = shared.take()
                shared.apply(await link.call(scripts.LENGTHS, [key], args))
        finally:
            await link.aclose()
        return shared.histogram("m", "chat")

    got = asyncio.run(scenario())
    assert got is not None
    assert got.samples == expected.samples == 900
    assert got.total == pytest.approx(expected.total, rel=1e-9)
    assert got.next_weight == pytest.approx(expected.next_weight, rel=1e-9)
    assert got.weights == pytest.approx(expected.weights, rel=1e-9)
    assert got.quantile(0.5) == pytest.approx(expected.quantile(0.5), rel=1e-9)


def test_answers_finished_through_one_gateway_teach_the_other(redis: RedisServer) -> None:
    async def scenario() -> None:
        async with gateways(redis.url, 2) as (a, b):
            for _ in range(30):
                a.record_output("m", "chat", 300)
            own = a._local.lengths().expected("m", "chat")
            assert own is not None and abs(own - 300) < 0.1 * 300
            await until(lambda: b.lengths().expected("m", "chat") == own, what="B's estimate from A's answers")
            assert b._local.lengths().expected("m", "chat") is None  # B relayed none itself
            assert b.lengths().expected("m", "other-task") is None
    asyncio.run(scenario())


def test_both_gateways_answers_make_one_estimate(redis: RedisServer) -> None:
    """A relays short answers, B long ones: each alone would plan with its own; shared, both plan
    with the distribution of all 80 (three quarters long: the median is long)."""
    async def scenario() -> None:
        async with gateways(redis.url, 2) as (a, b):
            for i in range(60):
                if i < 20:
                    a.record_output("m", "code", 100)
                b.record_output("m", "code", 1000)
            def converged() -> bool:
                histograms = [s.lengths() for s in (a, b)]
                return all(isinstance(h, SharedLengths) and (h.histogram("m", "code") or LengthHistogram()).samples == 80
                           for h in histograms)
            await until(converged, what="80 samples on both")
            estimates = {s.lengths().expected("m", "code") for s in (a, b)}
            assert len(estimates) == 1
            (estimate,) = estimates
            assert estimate is not None and 900 < estimate < 1100
            assert a._local.lengths().expected("m", "code") is not None  # A's own 20: short
            assert a._local.lengths().expected("m", "code") < 120  # type: ignore[operator]
    asyncio.run(scenario())


def test_without_redis_a_gateway_plans_with_its_own_answers() -> None:
    async def scenario() -> None:
        link = RedisLink(LinkSettings("redis://127.0.0.1:1/0", timeout_s=0.05))  # nothing listens on port 1
        store = RedisStateStore(link, StoreSettings(lengths=LENGTHS), gateway_id="gw", prefix="t:", refresh_s=0.01,
                                lengths_sync_s=0.01)
        await store.start()
        try:
            for _ in range(25):
                store.record_output("m", "chat", 50)
            await asyncio.sleep(0.1)  # refreshes fail meanwhile
            assert isinstance(store.lengths(), OutputLengths)
            assert store.lengths().expected("m", "chat") == store._local.lengths().expected("m", "chat")
            assert store.lengths().expected("m", "chat") is not None
        finally:
            await store.aclose()
    asyncio.run(scenario())


def test_queued_samples_are_kept_in_order_and_bounded_while_redis_is_away() -> None:
    shared = SharedLengths(LENGTHS)
    shared.pending_limit = 5
    for tokens in (1, 2, 4, 8):
        shared.add("m", "chat", tokens)
    args, taken = shared.take()
    assert args[3:] == ['["m","chat"]', "0 4 8 12"]  # buckets of 1, 2, 4, 8 tokens (4 a doubling)
    for tokens in (16, 32):
        shared.add("m", "chat", tokens)
    shared.restore(taken)  # the exchange failed: older first, then what came since; the oldest go
    assert shared.take()[0][3:] == ['["m","chat"]', "4 8 12 16 20"]
    assert shared.take()[0][3:] == []
