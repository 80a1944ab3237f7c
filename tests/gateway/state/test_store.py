"""InMemoryStateStore: snapshots, staleness, entry through the breaker, outcomes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from gateway.domain import BreakerState, Health, ReplicaState
from gateway.outcome import Outcome
from gateway.state.breaker import BreakerPolicy
from gateway.state.store import Entry, InMemoryStateStore, StateStore, StoreSettings
from gateway.state.vllm_metrics import VllmStats

T = TypeVar("T")
SETTINGS = StoreSettings(
    stale_after_s=5.0,
    half_life_s=10.0,
    breaker=BreakerPolicy(failure_threshold=2, cooldown_s=3.0, probe_timeout_s=30.0),
)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def _store() -> tuple[InMemoryStateStore, Clock]:
    clock = Clock()
    return InMemoryStateStore(SETTINGS, clock=clock), clock


def _outcome(ok: bool = True, status: int = 200, ttft_s: float | None = 0.05) -> Outcome:
    return Outcome(
        "r1",
        ok=ok,
        status=status,
        ttft_s=ttft_s,
        duration_s=0.55,
        input_tokens=10,
        output_tokens=11,
    )


def test_is_a_state_store() -> None:
    store: StateStore = InMemoryStateStore()
    assert store.snapshot() == {}


def test_unknown_until_checked_then_up_then_stale() -> None:
    store, clock = _store()

    async def scenario() -> list[Health]:
        await store.begin("r1")
        seen = [store.snapshot()["r1"].health]
        await store.record_health("r1", True, at=clock.t)
        seen.append(store.snapshot()["r1"].health)
        clock.t += 4.99
        seen.append(store.snapshot()["r1"].health)
        clock.t += 0.01
        seen.append(store.snapshot()["r1"].health)
        return seen

    assert run(scenario()) == [Health.UNKNOWN, Health.UP, Health.UP, Health.UNKNOWN]


@pytest.mark.parametrize(
    ("results", "health"),
    [
        ([True], Health.UP),
        ([False], Health.DOWN),
        ([True, False], Health.DOWN),
        ([False, True], Health.UP),
    ],
)
def test_latest_health_check_wins(results: list[bool], health: Health) -> None:
    store, clock = _store()

    async def scenario() -> Health:
        for healthy in results:
            clock.t += 1.0
            await store.record_health("r1", healthy, at=clock.t)
        return store.snapshot()["r1"].health

    assert run(scenario()) == health


def test_an_older_result_arriving_late_is_ignored() -> None:
    store, clock = _store()

    async def scenario() -> ReplicaState:
        await store.record_health("r1", True, at=clock.t)
        await store.record_health("r1", False, at=clock.t - 1.0)
        await store.record_stats("r1", VllmStats(running=1), at=clock.t)
        await store.record_stats("r1", VllmStats(running=9), at=clock.t - 1.0)
        return store.snapshot()["r1"]

    state = run(scenario())
    assert (state.health, state.running) == (Health.UP, 1)


def test_scraped_stats_show_until_stale() -> None:
    store, clock = _store()
    stats = VllmStats(running=3, waiting=2, kv_cache_usage=0.4)

    async def scenario() -> tuple[ReplicaState, ReplicaState]:
        await store.record_stats("r1", stats, at=clock.t)
        fresh = store.snapshot()["r1"]
        clock.t += 6.0
        return fresh, store.snapshot()["r1"]

    fresh, stale = run(scenario())
    assert (fresh.running, fresh.waiting, fresh.kv_cache_usage) == (3, 2, 0.4)
    assert (stale.running, stale.waiting, stale.kv_cache_usage) == (None, None, None)


def test_in_flight_counts_admitted_requests() -> None:
    store, _ = _store()

    async def scenario() -> list[int]:
        counts = []
        for _ in range(3):
            await store.begin("r1")
            counts.append(store.snapshot()["r1"].in_flight)
        for _ in range(4):  # one finish too many must not go negative
            await store.finish(_outcome())
            counts.append(store.snapshot()["r1"].in_flight)
        return counts

    assert run(scenario()) == [1, 2, 3, 2, 1, 0, 0]


def test_outcomes_feed_observations() -> None:
    store, _ = _store()

    async def scenario() -> ReplicaState:
        await store.begin("r1")
        await store.finish(_outcome())
        await store.begin("r1")
        await store.finish(_outcome(ok=False, status=429, ttft_s=None))
        return store.snapshot()["r1"]

    state = run(scenario())
    assert state.ttft_s == pytest.approx(0.05)
    assert state.tpot_s == pytest.approx(0.05)
    assert state.error_rate == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("status", "breaker"),
    [
        (500, BreakerState.OPEN),
        (0, BreakerState.OPEN),
        (429, BreakerState.CLOSED),  # overload is not a breaker failure
        (400, BreakerState.CLOSED),  # nor is the client's own error
    ],
)
def test_which_failures_open_the_breaker(status: int, breaker: BreakerState) -> None:
    store, _ = _store()

    async def scenario() -> BreakerState:
        for _ in range(SETTINGS.breaker.failure_threshold):
            await store.begin("r1")
            await store.finish(_outcome(ok=False, status=status))
        return store.snapshot()["r1"].breaker

    assert run(scenario()) is breaker


def test_breaker_cycle_through_the_store() -> None:
    store, clock = _store()

    async def scenario() -> None:
        for _ in range(2):
            await store.begin("r1")
            await store.finish(_outcome(ok=False, status=502))
        refused = await store.begin("r1")
        assert refused == Entry("r1", entered=False, reason="circuit breaker open")
        assert store.snapshot()["r1"].in_flight == 0  # a refusal is not in flight
        assert not store.snapshot()["r1"].routable

        clock.t += 3.0
        assert store.snapshot()["r1"].breaker is BreakerState.HALF_OPEN
        probe, other = await asyncio.gather(store.begin("r1"), store.begin("r1"))
        assert (probe.entered, probe.probe) == (True, True)
        assert not other.entered
        assert store.snapshot()["r1"].breaker is BreakerState.OPEN  # probe out: nothing admitted

        await store.finish(_outcome())
        assert store.snapshot()["r1"].breaker is BreakerState.CLOSED
        assert (await store.begin("r1")).entered

    run(scenario())


def test_forget_drops_a_replica_and_ignores_its_late_outcomes() -> None:
    store, _ = _store()

    async def scenario() -> None:
        await store.begin("r1")
        await store.forget("r1")
        await store.finish(_outcome())
        assert "r1" not in store.snapshot()
        await store.begin("r2")
        await store.aclose()
        assert store.snapshot() == {}

    run(scenario())


def test_snapshot_lists_every_replica_heard_of() -> None:
    store, clock = _store()

    async def scenario() -> set[str]:
        await store.record_health("a", True, at=clock.t)
        await store.record_stats("b", VllmStats(), at=clock.t)
        await store.begin("c")
        return set(store.snapshot())

    assert run(scenario()) == {"a", "b", "c"}


def test_cached_views_always_equal_a_fresh_build() -> None:
    """Snapshots reuse unchanged replicas' views; a random history must never expose a stale
    one (a view past its staleness or cooldown horizon, or from before a write)."""
    rng = random.Random(7)
    store, clock = _store()
    replica_ids = ["a", "b", "c"]

    async def step() -> None:
        rid = rng.choice(replica_ids)
        action = rng.randrange(6)
        if action == 0:
            await store.record_health(rid, rng.random() < 0.8, at=clock.t)
        elif action == 1:
            await store.record_stats(rid, VllmStats(running=rng.randrange(9)), at=clock.t)
        elif action == 2:
            await store.begin(rid)
        elif action == 3:
            status = rng.choice([200, 200, 429, 500, 0])
            await store.finish(Outcome(rid, status == 200, status, 0.05, 0.5, 1, 5))
        else:
            clock.t += rng.choice([0.0, 0.5, 1.0, 2.9, 3.0, 5.0, 31.0])

    async def scenario() -> None:
        for _ in range(3000):
            await step()
            now = clock.t
            built = {rid: store._build(rid, rec, now) for rid, rec in store._records.items()}
            assert store.snapshot() == built

    run(scenario())


def test_the_start_time_and_the_prefix_hit_rate_between_scrapes_reach_the_snapshot() -> None:
    store, clock = _store()

    async def scenario() -> ReplicaState:
        await store.record_stats("r1", VllmStats(prefix_cache_hits_total=0, prefix_cache_queries_total=0,
                                                 process_start_time_s=111.0), at=clock.t)
        clock.t += 1.0
        await store.record_stats("r1", VllmStats(prefix_cache_hits_total=300, prefix_cache_queries_total=400,
                                                 process_start_time_s=111.0), at=clock.t)
        return store.snapshot()["r1"]

    state = run(scenario())
    assert state.started_at == 111.0
    assert state.prefix_cache_hit_rate == 0.75


def test_an_idle_interval_keeps_the_last_measured_prefix_hit_rate() -> None:
    store, clock = _store()

    async def scenario() -> ReplicaState:
        for hits, queries in ((0, 0), (50, 100), (50, 100)):  # the last interval saw no query
            await store.record_stats("r1", VllmStats(prefix_cache_hits_total=hits, prefix_cache_queries_total=queries),
                                     at=clock.t)
            clock.t += 1.0
        return store.snapshot()["r1"]

    assert run(scenario()).prefix_cache_hit_rate == 0.5
