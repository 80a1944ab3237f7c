"""Background health checks and ``/metrics`` scrapes of every replica, written to the store.

Each replica gets two asyncio tasks (health, scrape), each on its own interval with jitter so
that N replicas, and N gateways, do not poll in lockstep. A check that times out or fails to
connect records the replica as unhealthy; a scrape that fails records nothing, so the last stats
age out of the store and read as unknown. Logging happens when something changes (a replica goes
down or comes back, scraping starts or stops failing), never per tick.

HTTP goes through an ``aiohttp.ClientSession`` that the caller owns, because the proxy speaks
aiohttp too: one client library, one event-loop-native connection pool type. If that session caps
its connections, give the monitor a session of its own, so a health check never queues behind
proxied streams for a connection slot and reads a busy replica as a dead one.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import aiohttp

from gateway.domain import Replica
from gateway.state.store import StateStore
from gateway.state.vllm_metrics import parse_vllm_metrics

logger = logging.getLogger(__name__)

# Errors a check expects from an unreachable, slow or misbehaving replica.
_EXPECTED = (aiohttp.ClientError, asyncio.TimeoutError, UnicodeDecodeError)


@dataclass(frozen=True, slots=True)
class MonitorSettings:
    """How often each replica is checked (``/health``) and scraped (``/metrics``), in seconds
    start to start; ``timeout_s`` bounds one request; each period is stretched or shrunk by a
    random factor in ``[1 - jitter, 1 + jitter]``. The config's ``state`` section gives the
    first three (no defaults here: they are written once, in ``gateway.config.types``)."""

    health_interval_s: float
    scrape_interval_s: float
    timeout_s: float
    jitter: float = 0.1


class ReplicaMonitor:
    """Polls ``{url}/health`` and ``{url}/metrics`` of each replica and records the results."""

    def __init__(
        self,
        replicas: Iterable[Replica],
        store: StateStore,
        *,
        settings: MonitorSettings,
        client: aiohttp.ClientSession,
        rng: random.Random | None = None,
        tls: Callable[[str], ssl.SSLContext | None] | None = None,
    ) -> None:
        self._replicas = {replica.id: replica for replica in replicas}
        self._store = store
        self._settings = settings
        self._timeout = aiohttp.ClientTimeout(total=settings.timeout_s)
        self._client = client
        # The TLS context an https:// replica is checked with (the proxy's own: same CAs).
        self._tls = tls or (lambda _: None)
        self._rng = rng or random.Random()
        self._tasks: dict[str, tuple[asyncio.Task[None], ...]] = {}
        # Last state logged per (replica, check): logging happens only when it changes.
        self._last: dict[tuple[str, str], str] = {}
        self._started = False

    @property
    def replicas(self) -> tuple[Replica, ...]:
        return tuple(self._replicas.values())

    async def start(self) -> None:
        """Check and scrape every replica once, then keep doing so in the background."""
        if self._started:
            raise RuntimeError("ReplicaMonitor already started")
        self._started = True
        await self._first_round(self._replicas.values())
        for replica in self._replicas.values():
            self._spawn(replica)

    async def stop(self) -> None:
        """Cancel every background task and wait for them to end."""
        self._started = False
        tasks = [task for pair in self._tasks.values() for task in pair]
        self._tasks.clear()
        await _cancel(tasks)

    async def update_replicas(self, replicas: Iterable[Replica]) -> None:
        """Switch to a new replica list (config reload): polling stops for removed replicas and
        their state is forgotten; new or changed ones get a first round before this returns."""
        wanted = {replica.id: replica for replica in replicas}
        gone = [rid for rid, old in self._replicas.items() if wanted.get(rid) != old]
        fresh = [new for rid, new in wanted.items() if self._replicas.get(rid) != new]
        self._replicas = wanted
        await _cancel([task for rid in gone for task in self._tasks.pop(rid, ())])
        for rid in gone:
            await self._guard(rid, "forget", self._store.forget(rid))
            self._last = {key: v for key, v in self._last.items() if key[0] != rid}
        if self._started:
            await self._first_round(fresh)
            for replica in fresh:
                self._spawn(replica)

    async def check_health(self, replica: Replica) -> None:
        """GET ``/health`` once and record whether it answered 200 within the timeout."""
        try:
            async with self._client.get(f"{replica.url}/health", timeout=self._timeout,
                                        ssl=self._tls(replica.url) or True) as resp:
                await resp.read()
                healthy, detail = resp.status == 200, f"HTTP {resp.status}"
        except _EXPECTED as exc:
            healthy, detail = False, _describe(exc)
        at = self._store.now()
        await self._guard(replica.id, "health", self._store.record_health(replica.id, healthy, at))
        state = "up" if healthy else "down"
        if self._changed(replica.id, "health", state):
            level = logging.INFO if healthy else logging.WARNING
            logger.log(level, "replica %s is %s (%s, %s)", replica.id, state, replica.url, detail)

    async def scrape(self, replica: Replica) -> None:
        """GET ``/metrics`` once; record the parsed stats if it answered 200 within the timeout."""
        try:
            async with self._client.get(f"{replica.url}/metrics", timeout=self._timeout,
                                        ssl=self._tls(replica.url) or True) as resp:
                text = await resp.text()
                failure = None if resp.status == 200 else f"HTTP {resp.status}"
        except _EXPECTED as exc:
            text, failure = "", _describe(exc)
        if failure is None:
            stats = parse_vllm_metrics(text)
            await self._guard(
                replica.id, "stats", self._store.record_stats(replica.id, stats, self._store.now())
            )
        if self._changed(replica.id, "scrape", failure or "ok"):
            if failure is None:
                logger.info("scraping replica %s works", replica.id)
            else:
                logger.warning("scraping replica %s fails: %s", replica.id, failure)

    async def _first_round(self, replicas: Iterable[Replica]) -> None:
        checks = [c for r in replicas for c in (self.check_health(r), self.scrape(r))]
        await asyncio.gather(*checks)

    def _spawn(self, replica: Replica) -> None:
        self._tasks[replica.id] = (
            asyncio.create_task(
                self._every(self._settings.health_interval_s, self.check_health, replica),
                name=f"duet-health-{replica.id}",
            ),
            asyncio.create_task(
                self._every(self._settings.scrape_interval_s, self.scrape, replica),
                name=f"duet-scrape-{replica.id}",
            ),
        )

    async def _every(
        self,
        interval_s: float,
        check: Callable[[Replica], Awaitable[None]],
        replica: Replica,
    ) -> None:
        """Run ``check`` every ``interval_s`` (start to start, jittered) until cancelled."""
        loop = asyncio.get_running_loop()
        jitter = self._settings.jitter
        elapsed = 0.0  # the first round ran just before this loop started
        while True:
            period = interval_s * self._rng.uniform(1 - jitter, 1 + jitter)
            # A slow check delays the next one by its overrun only; checks never pile up.
            await asyncio.sleep(max(0.0, period - elapsed))
            started = loop.time()
            await self._guard(replica.id, "loop", check(replica))
            elapsed = loop.time() - started

    async def _guard(self, replica_id: str, what: str, step: Awaitable[None]) -> None:
        """Await ``step``; an unexpected error is logged once per distinct error, not raised,
        because one bad replica or a store outage must not stop monitoring the others."""
        try:
            await step
        except Exception as exc:  # logged below: the loop must survive anything
            if self._changed(replica_id, f"error:{what}", repr(exc)):
                logger.exception("replica %s: %s failed", replica_id, what)
        else:
            self._changed(replica_id, f"error:{what}", "")

    def _changed(self, replica_id: str, check: str, state: str) -> bool:
        """Remember ``state`` for this check; whether it differs from the one remembered."""
        key = (replica_id, check)
        previous = self._last.get(key, "")
        self._last[key] = state
        return previous != state


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
