"""The limits, table-driven, through both quota books: in memory, and in a real redis-server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from gateway.access.ledger import Charge, month_of
from gateway.access.quotas import SPEND_LIMIT, Admission, InMemoryQuotaBook, QuotaBook, Refusal
from gateway.access.redis_quotas import RedisQuotaBook
from gateway.config.types import Tier
from gateway.state.redis.link import LinkSettings, RedisLink
from tests.redis_server import RedisServer

T0 = 1_790_000_000.0  # a fixed wall-clock instant (mid-September 2026, UTC)


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@asynccontextmanager
async def book(kind: str, redis: RedisServer) -> AsyncIterator[QuotaBook]:
    if kind == "memory":
        yield InMemoryQuotaBook()
        return
    link = RedisLink(LinkSettings(redis.url, timeout_s=1.0))
    link.start()
    try:
        yield RedisQuotaBook(link, f"q{uuid.uuid4().hex[:8]}:")
    finally:
        await link.aclose()


async def settled(quotas: QuotaBook, charge: Charge, now: float) -> None:
    await quotas.settle(charge, now)
    await asyncio.sleep(0.05)  # Redis settles through the link's queue; let it flush


def charge(tokens_out: int = 0, cost: float = 0.0, key: str = "k1") -> Charge:
    return Charge(key, "smollm2", "fast", "chat", 0, tokens_out, cost)


KINDS = ["memory", "redis"]


@pytest.mark.parametrize("kind", KINDS)
def test_requests_per_minute_is_a_sliding_window(kind: str, redis: RedisServer) -> None:
    async def main() -> None:
        async with book(kind, redis) as quotas:
            tier = Tier("t", requests_per_min=3)
            answers = [(await quotas.admit("k1", tier, T0 + i)).refusal for i in range(4)]
            assert answers[:3] == [None, None, None]
            assert answers[3] == Refusal("requests_per_min", pytest.approx(57.0))
            assert (await quotas.admit("k2", tier, T0 + 4)).refusal is None  # per key
            assert (await quotas.admit("k1", tier, T0 + 59.5)).refusal is not None
            assert (await quotas.admit("k1", tier, T0 + 60.5)).refusal is None  # the first left the window

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_admissions_admit_exactly_the_limit(kind: str, redis: RedisServer) -> None:
    async def main() -> int:
        async with book(kind, redis) as quotas:
            tier = Tier("t", requests_per_min=60)
            answers = await asyncio.gather(*(quotas.admit("k1", tier, T0) for _ in range(200)))
            return sum(a.refusal is None for a in answers)

    assert asyncio.run(main()) == 60


@pytest.mark.parametrize("kind", KINDS)
def test_tokens_per_minute_are_charged_after_the_fact(kind: str, redis: RedisServer) -> None:
    async def main() -> None:
        async with book(kind, redis) as quotas:
            tier = Tier("t", tokens_per_min=100)
            assert (await quotas.admit("k1", tier, T0)).refusal is None
            await settled(quotas, charge(tokens_out=60), T0)
            assert (await quotas.admit("k1", tier, T0 + 1)).refusal is None  # 60 < 100
            await settled(quotas, charge(tokens_out=50), T0 + 10)
            refusal = (await quotas.admit("k1", tier, T0 + 20)).refusal
            assert refusal is not None and refusal.limit == "tokens_per_min"
            assert refusal.retry_after_s == pytest.approx(40.0, abs=1.0)  # the 60 leave at T0+60
            assert (await quotas.admit("k1", tier, T0 + 61)).refusal is None

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_each_admission_reports_the_headroom_it_left(kind: str, redis: RedisServer) -> None:
    """What the x-ratelimit-* headers say, read in the admitting step, the same in both books."""
    from gateway.access.headroom import Headroom, WindowLeft

    async def main() -> None:
        async with book(kind, redis) as quotas:
            tier = Tier("t", requests_per_min=2, tokens_per_min=100)
            first = await quotas.admit("k1", tier, T0 + 0.25)
            assert first == Admission(None, Headroom(WindowLeft(2, 1, 59.75), WindowLeft(100, 100, 0.0)))
            await settled(quotas, charge(tokens_out=30), T0 + 5.5)
            second = await quotas.admit("k1", tier, T0 + 10.0)
            assert second.headroom == Headroom(WindowLeft(2, 0, 60.0), WindowLeft(100, 70, 55.0))
            third = await quotas.admit("k1", tier, T0 + 20.0)  # refused: nothing more counted
            assert third.refusal is not None and third.refusal.limit == "requests_per_min"
            assert third.headroom == Headroom(WindowLeft(2, 0, 50.0), WindowLeft(100, 70, 45.0))
            after = await quotas.admit("k1", tier, T0 + 70.5)  # both windows emptied, then one request
            assert after.headroom == Headroom(WindowLeft(2, 1, 59.5), WindowLeft(100, 100, 0.0))
            assert (await quotas.admit("k2", Tier("open"), T0)).headroom == Headroom()  # no limits: no headers

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_the_monthly_spend_limit_refuses_until_the_month_ends(kind: str, redis: RedisServer) -> None:
    async def main() -> None:
        async with book(kind, redis) as quotas:
            tier = Tier("t", monthly_spend_limit_usd=0.01)
            await settled(quotas, charge(cost=0.006), T0)
            assert (await quotas.admit("k1", tier, T0)).refusal is None
            await settled(quotas, charge(cost=0.006), T0)
            refusal = (await quotas.admit("k1", tier, T0)).refusal
            assert refusal is not None and refusal.limit == SPEND_LIMIT == "monthly_budget_usd"  # the wire name kept
            assert 0 < refusal.retry_after_s <= 31 * 86400

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_the_ledger_sums_per_key_model_variant_task(kind: str, redis: RedisServer) -> None:
    async def main() -> None:
        async with book(kind, redis) as quotas:
            await settled(quotas, Charge("k1", "smollm2", "fast", "chat", 10, 5, 0.001), T0)
            await settled(quotas, Charge("k1", "smollm2", "fast", "chat", 20, 7, 0.002), T0)
            await settled(quotas, Charge("k2", "smollm2", "standard", "coding", 1, 1, 0.5), T0)
            rows = await quotas.usage(month_of(T0))
            assert [(r.key_id, r.variant, r.task, r.requests, r.input_tokens, r.output_tokens) for r in rows] == [
                ("k1", "fast", "chat", 2, 30, 12), ("k2", "standard", "coding", 1, 1, 1)]
            assert rows[0].cost_usd == pytest.approx(0.003)
            assert [r.key_id for r in await quotas.usage(month_of(T0), "k2")] == ["k2"]
            assert await quotas.usage("1999-01") == []

    asyncio.run(main())


def lines_per_request(rate_per_s: float, seconds: int = 120) -> float:
    """Python lines the in-memory book runs per admitted-and-settled request (every limit set), in
    its second minute at ``rate_per_s``: counted, not timed."""
    import sys

    from gateway.access import quotas as quotas_module
    from gateway.access import window as window_module

    files = {quotas_module.__file__, window_module.__file__}
    lines = 0

    def trace(frame, event, arg):  # type: ignore[no-untyped-def]
        nonlocal lines
        if frame.f_code.co_filename not in files:
            return None
        if event == "line":
            lines += 1
        return trace

    async def main() -> float:
        nonlocal lines
        quotas = InMemoryQuotaBook()
        tier = Tier("t", requests_per_min=10**9, tokens_per_min=10**12, monthly_spend_limit_usd=10**6)
        count = int(rate_per_s * seconds)
        for i in range(count):
            now = T0 + i / rate_per_s
            if i == count // 2:
                lines = 0
                sys.settrace(trace)
            assert (await quotas.admit("k1", tier, now)).refusal is None
            await quotas.settle(charge(tokens_out=100, cost=1e-6), now)
        sys.settrace(None)
        return lines / (count - count // 2)

    return asyncio.run(main())


def test_a_quota_checks_cost_does_not_grow_with_the_request_rate() -> None:
    """A log of every charge was summed on every request: 50x the rate was 50x the lines."""
    slow, fast = lines_per_request(10), lines_per_request(500)
    assert fast <= slow * 1.1, (slow, fast)
    assert fast < 80


def redis_commands_per_request(redis: RedisServer, rate_per_s: float, seconds: int = 70) -> tuple[float, int]:
    """Redis commands the quota scripts run per admitted-and-settled request (every limit set) at
    ``rate_per_s``, from Redis's own command counts, and the most fields a window hash held."""
    import redis as redis_py

    admin = redis_py.Redis.from_url(redis.url)

    def calls() -> int:
        return sum(int(stats["calls"]) for name, stats in admin.info("commandstats").items()
                   if name not in ("cmdstat_info", "cmdstat_evalsha", "cmdstat_hlen", "cmdstat_ping"))

    async def main() -> tuple[float, int]:
        async with book("redis", redis) as quotas:
            tier = Tier("t", requests_per_min=10**9, tokens_per_min=10**12, monthly_spend_limit_usd=10**6)
            count, widest, before = int(rate_per_s * seconds), 0, calls()
            for i in range(count):
                now = T0 + i / rate_per_s
                assert (await quotas.admit("k1", tier, now)).refusal is None
                await quotas.settle(charge(tokens_out=100, cost=1e-6), now)
                if i % int(rate_per_s) == 0:
                    keys = admin.keys("*win:*")
                    widest = max([widest, *(admin.hlen(k) for k in keys)])
            await asyncio.sleep(0.05)
            return (calls() - before) / count, widest

    return asyncio.run(main())


def test_a_redis_quota_checks_commands_do_not_grow_with_the_request_rate(redis: RedisServer) -> None:
    """Each second is dropped from a window once, whatever the rate; a window holds at most 60
    seconds (plus its total and bounds), where the old sorted set held every admission."""
    slow, slow_widest = redis_commands_per_request(redis, 5)
    fast, fast_widest = redis_commands_per_request(redis, 60)
    assert fast <= slow, (slow, fast)
    assert slow_widest <= 63 and fast_widest <= 63


def test_the_month_changes_on_the_first_second_of_the_utc_month() -> None:
    import calendar

    start = calendar.timegm((2026, 10, 1, 0, 0, 0))
    assert [month_of(start - 0.001), month_of(start), month_of(start + 3599.9)] == ["2026-09", "2026-10", "2026-10"]
