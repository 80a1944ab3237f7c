"""ReplicaMonitor against real HTTP servers on loopback that the tests flip between healthy,
unhealthy, hanging and gone. Every wait is on a condition with a deadline."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.domain import Health, Replica
from gateway.state.monitor import MonitorSettings, ReplicaMonitor
from gateway.state.store import InMemoryStateStore, StoreSettings
from gateway.state.vllm_metrics import VllmStats
from tests.loopback_app import serve

FAST = MonitorSettings(health_interval_s=0.05, scrape_interval_s=0.05, timeout_s=0.3)
DEADLINE_S = 10.0


class FakeReplica:
    """A tiny vLLM-shaped server: ``/health`` and ``/metrics`` whose behaviour a test sets."""

    def __init__(self) -> None:
        self.mode = "healthy"  # healthy | unhealthy | hanging
        self.metrics_status = 200
        self.running = 0
        self.hits: Counter[str] = Counter()
        self.release = asyncio.Event()
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        self._runner, port = await serve(app)
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self.release.set()
        assert self._runner is not None
        await self._runner.cleanup()

    async def _health(self, request: web.Request) -> web.Response:
        self.hits["health"] += 1
        if self.mode == "hanging":
            await self.release.wait()
        return web.Response(status=200 if self.mode == "healthy" else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        self.hits["metrics"] += 1
        if self.mode == "hanging":
            await self.release.wait()
        body = (
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{engine="0",model_name="m"}} {self.running}.0\n'
        )
        return web.Response(status=self.metrics_status, text=body)


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


async def eventually(condition: Callable[[], bool], what: str) -> None:
    """Wait until ``condition()`` holds, failing with ``what`` after the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@asynccontextmanager
async def replicas(n: int) -> AsyncIterator[list[FakeReplica]]:
    servers = [FakeReplica() for _ in range(n)]
    for server in servers:
        await server.start()
    try:
        yield servers
    finally:
        for server in servers:
            await server.stop()


@asynccontextmanager
async def monitoring(
    servers: list[FakeReplica], store: InMemoryStateStore, **changes: float
) -> AsyncIterator[ReplicaMonitor]:
    """A started monitor of ``servers`` with FAST settings but for ``changes``."""
    settings = dataclasses.replace(FAST, **changes)
    async with aiohttp.ClientSession() as client:
        monitor = ReplicaMonitor(_replicas(servers), store, settings=settings, client=client)
        await monitor.start()
        try:
            yield monitor
        finally:
            await monitor.stop()


def _replicas(servers: list[FakeReplica]) -> list[Replica]:
    return [Replica(f"r{i}", "m", "standard", s.url) for i, s in enumerate(servers)]


def _health(store: InMemoryStateStore, replica_id: str) -> Health | None:
    state = store.snapshot().get(replica_id)
    return state.health if state else None


def test_start_knows_who_is_up_before_returning() -> None:
    async def scenario() -> None:
        async with replicas(2) as servers:
            servers[0].running, servers[1].mode = 4, "unhealthy"
            store = InMemoryStateStore()
            # Long intervals: only the first round can have run when start() returns.
            async with monitoring(servers, store, health_interval_s=60, scrape_interval_s=60):
                snapshot = store.snapshot()
                assert snapshot["r0"].health is Health.UP
                assert snapshot["r0"].running == 4
                assert snapshot["r1"].health is Health.DOWN

    run(scenario())


def test_follows_a_replica_going_down_and_coming_back() -> None:
    async def scenario() -> None:
        async with replicas(1) as servers:
            store = InMemoryStateStore()
            async with monitoring(servers, store):
                servers[0].mode = "unhealthy"
                await eventually(lambda: _health(store, "r0") is Health.DOWN, "DOWN")
                servers[0].mode = "healthy"
                servers[0].running = 7
                await eventually(lambda: _health(store, "r0") is Health.UP, "UP again")
                await eventually(lambda: store.snapshot()["r0"].running == 7, "new stats")

    run(scenario())


def test_a_hanging_replica_times_out_without_stalling_the_others() -> None:
    async def scenario() -> None:
        async with replicas(2) as servers:
            store = InMemoryStateStore()
            # 1 s: a check of the healthy replica on a loaded machine can take a few hundred ms,
            # and must not be mistaken for a hang.
            async with monitoring(servers, store, timeout_s=1.0):
                servers[0].mode = "hanging"
                await eventually(lambda: _health(store, "r0") is Health.DOWN, "hang -> DOWN")
                servers[1].running = 5
                await eventually(lambda: store.snapshot()["r1"].running == 5, "r1 polled")
                assert _health(store, "r1") is Health.UP

    run(scenario())


def test_an_unreachable_replica_is_down() -> None:
    async def scenario() -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        try:
            gone = Replica("gone", "m", "standard", f"http://127.0.0.1:{sock.getsockname()[1]}")
            store = InMemoryStateStore()
            async with aiohttp.ClientSession() as client:
                monitor = ReplicaMonitor([gone], store, settings=FAST, client=client)
                await monitor.start()
                await monitor.stop()
            assert _health(store, "gone") is Health.DOWN
            assert store.snapshot()["gone"].running is None
        finally:
            sock.close()

    run(scenario())


def test_failing_scrapes_let_stats_go_stale() -> None:
    async def scenario() -> None:
        async with replicas(1) as servers:
            servers[0].running = 2
            store = InMemoryStateStore(StoreSettings(stale_after_s=0.3))
            async with monitoring(servers, store):
                assert store.snapshot()["r0"].running == 2
                servers[0].metrics_status = 500
                await eventually(lambda: store.snapshot()["r0"].running is None, "stale stats")
                assert _health(store, "r0") is Health.UP

    run(scenario())


def test_health_goes_unknown_when_the_monitor_stops() -> None:
    async def scenario() -> None:
        async with replicas(1) as servers:
            store = InMemoryStateStore(StoreSettings(stale_after_s=0.3))
            async with monitoring(servers, store):
                assert _health(store, "r0") is Health.UP
            await eventually(lambda: _health(store, "r0") is Health.UNKNOWN, "UNKNOWN")

    run(scenario())


def test_update_replicas_adds_and_removes_at_run_time() -> None:
    async def scenario() -> None:
        async with replicas(3) as servers:
            store = InMemoryStateStore()
            _, second, third = _replicas(servers)
            async with monitoring(servers[:2], store) as monitor:
                await monitor.update_replicas([second, Replica("r2", "m", "fast", third.url)])
                assert set(store.snapshot()) == {"r1", "r2"}
                assert _health(store, "r2") is Health.UP  # first round ran before returning
                hits = servers[0].hits["health"]
                seen = servers[1].hits["health"]
                await eventually(lambda: servers[1].hits["health"] >= seen + 3, "r1 polled")
                assert servers[0].hits["health"] == hits  # r0 is no longer polled
                assert monitor.replicas == (second, Replica("r2", "m", "fast", third.url))

    run(scenario())


def test_stop_cancels_every_task() -> None:
    async def scenario() -> None:
        async with replicas(2) as servers:
            async with monitoring(servers, InMemoryStateStore()):
                assert _duet_tasks()
            assert not _duet_tasks()

    run(scenario())


def _duet_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("duet-")]


def test_logs_on_changes_not_on_every_tick(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gateway.state.monitor")

    async def scenario() -> None:
        async with replicas(1) as servers, monitoring(servers, InMemoryStateStore()):
            await eventually(lambda: servers[0].hits["health"] >= 5, "several checks")
            servers[0].mode = "unhealthy"
            seen = servers[0].hits["health"]
            await eventually(lambda: servers[0].hits["health"] >= seen + 5, "more checks")

    run(scenario())
    messages = [r.getMessage() for r in caplog.records]
    assert sum(" is up " in m for m in messages) == 1
    assert sum(" is down " in m for m in messages) == 1
    assert sum("scraping replica r0 works" in m for m in messages) == 1


class BrokenStatsStore(InMemoryStateStore):
    """A store whose stats writes fail, as a shared store's might during an outage."""

    async def record_stats(self, replica_id: str, stats: VllmStats, at: float) -> None:
        raise ConnectionError("store unavailable")


def test_store_errors_are_logged_once_and_never_stop_the_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.state.monitor")

    async def scenario() -> None:
        async with replicas(1) as servers:
            store = BrokenStatsStore()
            async with monitoring(servers, store):
                await eventually(lambda: servers[0].hits["metrics"] >= 5, "scrapes go on")
                servers[0].mode = "unhealthy"
                await eventually(lambda: _health(store, "r0") is Health.DOWN, "health goes on")

    run(scenario())
    failures = [r for r in caplog.records if "stats failed" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None
