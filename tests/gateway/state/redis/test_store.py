"""RedisStateStore against a real redis-server: the Lua rules agree with the Python ones, and
several stores (gateways) see one another's in-flight counts, breakers, health and latencies;
a Redis outage falls back to local state without hanging."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager

import pytest

from gateway.domain import BreakerState, Health
from gateway.outcome import Outcome
from gateway.state import breaker as breakers
from gateway.state.breaker import Breaker, BreakerPolicy, Permit
from gateway.state.observations import Observations, observe
from gateway.state.outcomes import OutcomeKind, classify
from gateway.state.redis import scripts
from gateway.state.redis.link import LinkSettings, RedisLink
from gateway.state.redis.store import RedisStateStore, SharedRecord
from gateway.state.store import StoreSettings
from gateway.state.vllm_metrics import VllmStats
from tests.redis_server import RedisServer

POLICY = BreakerPolicy(failure_threshold=2, cooldown_s=0.3, max_cooldown_s=2.0, backoff=2.0, probe_timeout_s=5.0)
SETTINGS = StoreSettings(stale_after_s=5.0, half_life_s=10.0, breaker=POLICY)


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@asynccontextmanager
async def stores(url: str, count: int, refresh_s: float = 0.02) -> AsyncIterator[list[RedisStateStore]]:
    """``count`` stores sharing one fresh prefix, as ``count`` gateways would."""
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    made = [RedisStateStore(RedisLink(LinkSettings(url, timeout_s=1.0)), SETTINGS, gateway_id=f"gw{i}", prefix=prefix,
                            refresh_s=refresh_s) for i in range(count)]
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
        await asyncio.sleep(0.005)


def outcome(kind: str, replica: str = "r1") -> Outcome:
    status = {"success": 200, "failure": 502, "overload": 429, "client": 400}[kind]
    return Outcome(replica, kind == "success", status, 0.05 if kind == "success" else None, 0.5, 10, 11)


def test_lua_breaker_and_observations_agree_with_python(redis: RedisServer) -> None:
    """Random event sequences, replayed through breaker.py/observations.py and the scripts at
    the same instants, leave the same breaker and the same means."""

    async def replay(seed: int) -> None:
        rng = random.Random(seed)
        link = RedisLink(LinkSettings(redis.url, timeout_s=1.0))
        link.start()
        keys = [f"eq{seed}:{uuid.uuid4().hex}:rec", f"eq{seed}:{uuid.uuid4().hex}:inf"]
        python, observed, now = Breaker(), Observations(), 1000.0
        try:
            for _ in range(60):
                now += rng.choice([0.0, 0.05, 0.2, 0.4, 1.5])
                if rng.random() < 0.4:
                    python, permit = breakers.admit(python, POLICY, now)
                    reply, _ = await link.call(scripts.BEGIN, keys, ["gw", now, POLICY.probe_timeout_s])
                    assert reply.decode() == {Permit.ALLOWED: "allowed", Permit.PROBE: "probe", Permit.REFUSED: "refused"}[permit]
                else:
                    event = outcome(rng.choice(["success", "success", "failure", "failure", "overload", "client"]))
                    kind = classify(event)
                    python = _feed(python, kind, now)
                    observed = observe(observed, event, kind, now, SETTINGS.half_life_s)
                    args = ["gw", now, kind.value, event.ttft_s if event.ttft_s is not None else "", "",
                            SETTINGS.half_life_s, POLICY.failure_threshold, POLICY.cooldown_s, POLICY.max_cooldown_s,
                            POLICY.backoff]
                    await link.call(scripts.FINISH, keys, args)
                fields = await link.client.hgetall(keys[0])
                record = SharedRecord({k.decode(): v.decode() for k, v in fields.items()}, 0)
                assert _same_breaker(record.breaker(), python), (seed, record.breaker(), python)
                assert record.mean("err") == pytest.approx(observed.errors.value, abs=1e-9)
                assert record.mean("ttft") == pytest.approx(observed.ttft_s, abs=1e-9)
        finally:
            await link.aclose()

    for seed in range(8):
        asyncio.run(replay(seed))


def _feed(breaker: Breaker, kind: OutcomeKind, now: float) -> Breaker:
    if kind is OutcomeKind.SUCCESS:
        return breakers.record_success(breaker, now)
    if kind is OutcomeKind.FAILURE:
        return breakers.record_failure(breaker, POLICY, now)
    return breakers.release_probe(breaker)


def _same_breaker(shared: Breaker, python: Breaker) -> bool:
    # Lua stores numbers with 14 significant digits: compare times to 1 ms.
    return (shared.state, shared.consecutive_failures) == (python.state, python.consecutive_failures) and all(
        (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-3)
        for a, b in [(shared.opened_at, python.opened_at), (shared.cooldown_s, python.cooldown_s),
                     (shared.probe_until, python.probe_until)]
    )


def run_with(redis: RedisServer, count: int, body: Callable[[list[RedisStateStore]], Awaitable[None]]) -> None:
    async def main() -> None:
        async with stores(redis.url, count) as made:
            await body(made)

    asyncio.run(main())


def test_in_flight_counts_add_up_across_gateways(redis: RedisServer) -> None:
    async def body(made: list[RedisStateStore]) -> None:
        a, b = made
        for store in made:
            await store.record_health("r1", True, store.now())
        await until(lambda: all("r1" in s.snapshot() for s in made), what="replica known to both")
        for _ in range(3):
            assert (await a.begin("r1")).entered
        for _ in range(2):
            assert (await b.begin("r1")).entered
        await until(lambda: all(s.snapshot()["r1"].in_flight == 5 for s in made), what="5 in flight seen by both")
        await a.finish(outcome("success"))
        await b.finish(outcome("success"))
        await until(lambda: all(s.snapshot()["r1"].in_flight == 3 for s in made), what="3 in flight seen by both")

    run_with(redis, 2, body)


def test_a_dead_gateways_requests_stop_counting(redis: RedisServer) -> None:
    async def body(made: list[RedisStateStore]) -> None:
        a, dying = made
        for store in made:  # each gateway's monitor checks every configured replica
            await store.record_health("r1", True, store.now())
        await until(lambda: "r1" in dying.snapshot())
        for _ in range(4):
            await dying.begin("r1")
        await until(lambda: a.snapshot().get("r1") is not None and a.snapshot()["r1"].in_flight == 4)
        await dying.aclose()  # dies without finishing: its liveness key expires
        await until(lambda: a.snapshot()["r1"].in_flight == 0, timeout_s=5, what="dead gateway's count dropped")

    run_with(redis, 2, body)


def test_a_breaker_tripped_by_one_gateway_is_seen_by_the_other(redis: RedisServer) -> None:
    async def body(made: list[RedisStateStore]) -> None:
        a, b = made
        for store in made:
            await store.record_health("r1", True, store.now())
        await until(lambda: all("r1" in s.snapshot() for s in made))
        for _ in range(POLICY.failure_threshold):
            assert (await a.begin("r1")).entered
            await a.finish(outcome("failure"))
        await until(lambda: b.snapshot()["r1"].breaker is BreakerState.OPEN, what="B sees A's open breaker")
        assert not b.snapshot()["r1"].routable
        assert not (await b.begin("r1")).entered
        # After the cooldown exactly one gateway claims the half-open probe.
        await until(lambda: all(s.snapshot()["r1"].breaker is BreakerState.HALF_OPEN for s in made), what="half open")
        entries = await asyncio.gather(*(s.begin("r1") for s in made for _ in range(3)))
        assert sum(x.entered for x in entries) == 1 and sum(x.probe for x in entries) == 1
        winner = next(s for s, x in zip([s for s in made for _ in range(3)], entries, strict=True) if x.entered)
        await winner.finish(outcome("success"))
        await until(lambda: all(s.snapshot()["r1"].breaker is BreakerState.CLOSED for s in made), what="closed again")

    run_with(redis, 2, body)


def test_health_stats_and_latency_are_shared(redis: RedisServer) -> None:
    async def body(made: list[RedisStateStore]) -> None:
        a, b = made
        now = a.now()
        await a.record_health("r1", True, now)
        await a.record_stats("r1", VllmStats(running=3, waiting=1, kv_cache_usage=0.25,
                                             process_start_time_s=1_764_800_000.25), now)
        await b.record_health("r1", False, now - 1.0)  # older than A's check: ignored
        await b.begin("r1")  # tracked by B from now on
        await b.finish(outcome("success"))
        def arrived() -> bool:  # A's and B's writes travel on two connections, in either order
            state = b.snapshot().get("r1")
            return state is not None and state.ttft_s is not None and state.running is not None

        await until(arrived, what="A's check and scrape, B's outcome")
        seen = b.snapshot()["r1"]
        assert (seen.health, seen.running, seen.waiting, seen.kv_cache_usage) == (Health.UP, 3, 1, 0.25)
        assert seen.started_at == 1_764_800_000.25  # B's prefix index forgets when A scrapes a restart
        assert seen.ttft_s == pytest.approx(0.05)
        assert seen.tpot_s == pytest.approx((0.5 - 0.05) / 10)

    run_with(redis, 2, body)


def test_redis_outage_falls_back_to_local_state_and_recovers(tmp_path_factory: pytest.TempPathFactory) -> None:
    async def main(server: RedisServer) -> None:
        async with stores(server.url, 1) as (store,):
            await store.record_health("r1", True, store.now())
            await until(lambda: "r1" in store.snapshot() and store.shared)
            server.kill()
            started = time.monotonic()
            await until(lambda: not store.shared, what="outage noticed")
            entry = await store.begin("r1")
            await store.finish(outcome("success"))
            assert entry.entered
            assert store.snapshot()["r1"].health is Health.UP  # local state still routes
            assert time.monotonic() - started < 2.0
            server.start()
            await until(lambda: store.shared, timeout_s=10, what="shared state resumed")
            await store.record_health("r1", True, store.now())
            await until(lambda: store.snapshot()["r1"].health is Health.UP)

    with RedisServer() as server:
        asyncio.run(main(server))
