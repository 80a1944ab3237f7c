"""The ledger's receipt sums, through both quota books (in memory, and a real redis-server with
two books on one prefix as two gateways hold them): the per-request receipt lines sum exactly to
the ledger's totals, per key x variant x task."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from gateway.access.ledger import RECEIPT_METRICS, Charge, UsageRow, month_of, rows_from_fields
from gateway.access.quotas import InMemoryQuotaBook, QuotaBook
from gateway.access.receipts.receipt import Receipt
from gateway.access.redis_quotas import RedisQuotaBook
from gateway.state.redis.link import LinkSettings, RedisLink
from tests.redis_server import RedisServer

T0 = 1_790_000_000.0


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def charges(count: int, seed: int) -> list[Charge]:
    """Requests of two keys on two variants and two tasks, with receipts of awkward sizes."""
    draw = random.Random(seed)
    made = []
    for _ in range(count):
        fast = draw.random() < 0.7
        gpu, standard = draw.randrange(1, 10**9), draw.randrange(1, 10**9)
        receipt = Receipt(gpu, draw.randrange(10**7), standard if fast else gpu, draw.randrange(10**7), fast)
        made.append(Charge(draw.choice(("k1", "k2")), "m", "fast" if fast else "standard", draw.choice(("chat", "code")),
                           draw.randrange(500), draw.randrange(200), draw.random() / 1000, receipt))
    return made


def expected(made: list[Charge]) -> dict[tuple[str, str, str], Counter[str]]:
    totals: dict[tuple[str, str, str], Counter[str]] = {}
    for charge in made:
        counter = totals.setdefault((charge.key_id, charge.variant, charge.task), Counter())
        counter["requests"] += 1
        for metric, amount in zip(RECEIPT_METRICS, charge.receipt_amounts, strict=True):
            counter[metric] += amount
    return totals


def ledgered(rows: list[UsageRow] | tuple[UsageRow, ...]) -> dict[tuple[str, str, str], Counter[str]]:
    return {(r.key_id, r.variant, r.task): Counter({"requests": r.requests, **{m: getattr(r, m) for m in RECEIPT_METRICS}})
            for r in rows}


def test_receipt_lines_sum_exactly_to_the_in_memory_ledger() -> None:
    made = charges(500, seed=1)

    async def main() -> list[UsageRow]:
        book = InMemoryQuotaBook()
        for charge in made:
            await book.settle(charge, T0)
        return list(await book.usage(month_of(T0)))

    assert ledgered(asyncio.run(main())) == expected(made)


def test_receipt_lines_settled_by_two_books_on_one_redis_sum_exactly(redis: RedisServer) -> None:
    made = charges(600, seed=2)
    prefix = f"r{uuid.uuid4().hex[:8]}:"

    async def main() -> list[UsageRow]:
        links = [RedisLink(LinkSettings(redis.url, timeout_s=2.0)) for _ in range(2)]
        for link in links:
            link.start()
        books: list[QuotaBook] = [RedisQuotaBook(link, prefix) for link in links]
        try:
            await asyncio.gather(*(books[i % 2].settle(charge, T0) for i, charge in enumerate(made)))
            deadline = time.monotonic() + 20
            while sum(r.requests for r in await books[0].usage(month_of(T0))) < len(made):
                assert time.monotonic() < deadline, "the settles did not reach the ledger"
                await asyncio.sleep(0.02)  # polling the ledger until both links flushed
            return list(await books[1].usage(month_of(T0)))
        finally:
            for link in links:
                await link.aclose()

    assert ledgered(asyncio.run(main())) == expected(made)


def test_a_ledger_without_receipts_reads_as_zero() -> None:
    (row,) = rows_from_fields([("k\tm\tv\tt\trequests", "3"), ("k\tm\tv\tt\tcost_usd", "0.5")])
    assert (row.requests, row.gpu_us, row.standard_nano_usd, row.fast_requests) == (3, 0, 0, 0)
