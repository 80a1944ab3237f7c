"""A spend limit holds each request's estimated cost from admission until it ends: requests in flight
at once cannot all pass on spend so far and overspend together, and a request refused after
admission gives its hold back. Through the access gate, on both quota books."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import yaml

from gateway.access.ceiling import BYTES_PER_TOKEN, UsageCeiling
from gateway.access.guard import Grant, KeyedAccess
from gateway.access.keys import new_key
from gateway.access.keystore import FileKeyStore
from gateway.access.quotas import InMemoryQuotaBook, QuotaBook
from gateway.access.redis_quotas import RedisQuotaBook
from gateway.config import parse_config
from gateway.config.types import DuetConfig
from gateway.errors import RateLimited
from gateway.outcome import Outcome
from gateway.state.redis.link import LinkSettings, RedisLink
from gateway.telemetry import Telemetry
from tests.redis_server import RedisServer

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
SPEND_LIMIT_USD = 0.01
# 4,000 input tokens and 1,000 output tokens at the dearer variant's price (0.20 / 0.80 per Mtok).
CEILING = UsageCeiling(body_bytes=4_000 * BYTES_PER_TOKEN, max_output_tokens=1_000)
ESTIMATE_USD = (4_000 * 0.20 + 1_000 * 0.80) / 1e6


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def config(tmp: Path) -> DuetConfig:
    raw = yaml.safe_load(DEMO.read_text())
    tiers = {"thrifty": {"monthly_spend_limit_usd": SPEND_LIMIT_USD}}
    raw["access"] = {"require_keys": True, "keys_file": str(tmp / "keys.json"), "tiers": tiers}
    return parse_config(yaml.safe_dump(raw))


@asynccontextmanager
async def gate(kind: str, tmp: Path, redis: RedisServer) -> AsyncIterator[tuple[KeyedAccess, str]]:
    cfg = config(tmp)
    store = FileKeyStore(cfg.access.keys_file)
    secret, record = new_key("k", "thrifty", 1.0)
    await store.add(record)
    link = None
    quotas: QuotaBook = InMemoryQuotaBook()
    if kind == "redis":
        link = RedisLink(LinkSettings(redis.url, timeout_s=1.0))
        link.start()
        quotas = RedisQuotaBook(link, f"r{uuid.uuid4().hex[:8]}:")
    access = KeyedAccess(lambda: cfg, store, quotas, Telemetry())
    await access.refresh_keys()
    try:
        yield access, secret
    finally:
        if link is not None:
            await link.aclose()


async def flushed() -> None:
    await asyncio.sleep(0.05)  # Redis settles and releases through the link's queue


def test_the_estimate_is_the_dearest_allowed_variants_ceiling(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    variants = list(cfg.models["smollm2"].variants.values())
    assert CEILING.cost_usd(variants) == pytest.approx(ESTIMATE_USD)
    cheap = min(variants, key=lambda v: v.price.output_per_mtok)
    assert CEILING.cost_usd([cheap]) < ESTIMATE_USD
    open_ended = UsageCeiling(body_bytes=400)  # no max_tokens: what the context (2048) leaves after 100 tokens
    assert open_ended.cost_usd(variants) == pytest.approx((100 * 0.20 + 1_948 * 0.80) / 1e6)


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_concurrent_requests_spend_at_most_the_limit_plus_one_estimate(kind: str, tmp_path: Path, redis: RedisServer) -> None:
    """60 requests arrive at once, each costing its whole estimate: without holds all 60 pass the
    check on spend so far (0) and spend 6x the limit."""

    async def request(access: KeyedAccess, secret: str) -> float:
        try:
            grant = await access.authorize(await access.authenticate(secret), "smollm2", CEILING)
        except RateLimited:
            return 0.0
        await asyncio.sleep(0.01)  # in flight together
        outcome = Outcome("smollm2/standard/0", True, 200, 0.1, 1.0, 4_000, 1_000)
        variant = config(tmp_path).models["smollm2"].variants["standard"]
        await access.settle(grant, "smollm2", variant, "chat", outcome)
        access.release(grant)
        return variant.price.cost_usd(4_000, 1_000)

    async def main() -> tuple[float, int]:
        async with gate(kind, tmp_path, redis) as (access, secret):
            spent = await asyncio.gather(*(request(access, secret) for _ in range(60)))
            return sum(spent), sum(1 for s in spent if s)

    spent, served = asyncio.run(main())
    assert spent <= SPEND_LIMIT_USD + ESTIMATE_USD
    assert served == 7  # 0.01 / 0.0016: six fit, the seventh is admitted at 0.0096 < 0.01


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_a_request_refused_after_admission_gives_its_hold_back(kind: str, tmp_path: Path, redis: RedisServer) -> None:
    async def main() -> None:
        async with gate(kind, tmp_path, redis) as (access, secret):
            key = await access.authenticate(secret)
            held = [await access.authorize(key, "smollm2", CEILING) for _ in range(7)]
            with pytest.raises(RateLimited, match="monthly spend limit"):
                await access.authorize(key, "smollm2", CEILING)
            for grant in held:  # refused by admission control, or no replica answered: nothing spent
                access.release(grant)
                access.release(grant)  # given back once only
            await flushed()
            again: list[Grant] = [await access.authorize(key, "smollm2", CEILING) for _ in range(7)]
            assert len(again) == 7

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_settling_replaces_the_hold_with_the_actual_cost(kind: str, tmp_path: Path, redis: RedisServer) -> None:
    """Cheap answers give back most of their hold: a limit of 0.01 serves far more than seven."""

    async def main() -> int:
        async with gate(kind, tmp_path, redis) as (access, secret):
            key = await access.authenticate(secret)
            served = 0
            cheap = config(tmp_path).models["smollm2"].variants["fast"]
            for _ in range(40):
                grant = await access.authorize(key, "smollm2", CEILING)
                await access.settle(grant, "smollm2", cheap, "chat", Outcome("r", True, 200, 0.1, 0.2, 100, 10))
                access.release(grant)
                served += 1
            return served

    assert asyncio.run(main()) == 40
