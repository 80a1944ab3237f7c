"""Parity's journal: the latest revision per variant and task over a period, in memory and in a
real redis-server written by two gateways' journals on one prefix; and online parity recording a
revocation it made into it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from gateway.config import load_config
from gateway.config.types import DuetConfig
from gateway.parity.journal import InMemoryJournal, Journal, RedisJournal, Revised
from gateway.parity.metrics import ParityMetrics
from gateway.parity.online import OnlineParity, PolicyHost
from gateway.parity.ports import ParityTools
from gateway.parity.sequential import Conclusion, Design
from gateway.parity.verdicts import PairRecord
from gateway.state.redis.link import LinkSettings, RedisLink
from tests.redis_server import RedisServer

OCT, NOV = 1_793_000_000.0, 1_796_000_000.0  # 2026-10-26 .. 2026-11-30 UTC: two months apart
DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def months(*instants: float) -> list[str]:
    return sorted({time.strftime("%Y-%m", time.gmtime(t)) for t in instants})


async def written(journals: list[Journal], period: list[str], count: int) -> dict[Any, Revised]:
    """The period's revisions once ``count`` (variant, task) pairs are in (Redis writes are queued)."""
    deadline = time.monotonic() + 10
    while len(found := dict(await journals[-1].revisions(period))) < count:
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.02)  # polling until the links flushed
    return found


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_the_latest_revision_per_variant_and_task_over_the_period(kind: str, redis: RedisServer) -> None:
    async def main() -> tuple[dict[Any, Revised], dict[Any, Revised]]:
        links: list[RedisLink] = []
        if kind == "memory":
            journals: list[Journal] = [InMemoryJournal()]
        else:
            prefix = f"j{uuid.uuid4().hex[:8]}:"
            links = [RedisLink(LinkSettings(redis.url, timeout_s=2.0)) for _ in range(2)]
            for link in links:
                link.start()
            journals = [RedisJournal(link, prefix) for link in links]
        try:
            journals[0].record(Revised("m:fast", "chat", False, OCT))
            journals[-1].record(Revised("m:fast", "chat", True, NOV))  # restored later, by the other gateway
            journals[0].record(Revised("m:fast", "code", False, NOV + 60))
            whole = await written(journals, months(OCT, NOV), 2)
            first = dict(await journals[-1].revisions(months(OCT)))
            return whole, first
        finally:
            for link in links:
                await link.aclose()

    whole, first = asyncio.run(main())
    assert whole == {("m:fast", "chat"): Revised("m:fast", "chat", True, NOV),
                     ("m:fast", "code"): Revised("m:fast", "code", False, NOV + 60)}
    assert first == {("m:fast", "chat"): Revised("m:fast", "chat", False, OCT)}


def test_online_parity_records_the_revocation_it_made() -> None:
    config: list[DuetConfig] = [load_config(DEMO)]
    journal = InMemoryJournal()

    async def apply(changed: DuetConfig) -> None:
        config[0] = changed

    async def no_reload() -> bool:
        return False

    host = PolicyHost(None, lambda: config[0], no_reload, apply)
    tools = ParityTools(judge=None, record=None)  # type: ignore[arg-type]  # no file: neither is called
    online = OnlineParity(host, tools, ParityMetrics(CollectorRegistry()), lambda _: None, journal)  # type: ignore[arg-type, return-value]
    variant = next(v for v in config[0].models["smollm2"].variants.values() if v.kind.value != "full")
    task = next(iter(variant.allowed_tasks or config[0].policy.tasks))
    design = Design(0.05, 0.05, 0.5)
    conclusion = None
    for i in range(200):  # every pair lost: the test concludes a loss
        record = PairRecord(float(i), variant.key, task, "r", "s", "c", 1.0, 0.0, "exact", "", True, 1.0, 1.0)
        conclusion = online.verdicts.add(record, design, allowed_now=True) or conclusion
        if conclusion is not None:
            break
    assert conclusion is Conclusion.LOSS

    before = time.time()
    asyncio.run(online._concluded(variant.key, task, Conclusion.LOSS))

    assert not config[0].models["smollm2"].variants[variant.name].allows(task)
    (revised,) = asyncio.run(journal.revisions(months(time.time()))).values()
    assert (revised.variant, revised.task, revised.allowed) == (variant.key, task, False)
    assert revised.at >= before
