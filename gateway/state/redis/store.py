"""Replica state shared by every gateway through Redis, so N gateways route as one: the same
health, scraped stats, in-flight counts, breakers and observed latencies.

How it meets ``StateStore``'s contract without putting Redis on the request path:

- ``snapshot`` reads a local copy that a background task refreshes every ``refresh_s`` with one
  script (which also publishes this gateway's in-flight counts and renews its liveness).
- ``begin`` decides from that copy when the breaker reads CLOSED (admitted, no round trip) or
  OPEN (refused); only a breaker whose cooldown has passed needs the atomic ``begin`` script, so
  exactly one gateway claims its probe. In-flight counts are this gateway's own, exact, plus the
  other gateways' as of their last refresh (each publishes its own counts with every refresh).
- ``finish``, ``record_health`` and ``record_stats`` are queued writes: the next pipeline carries
  them, the caller never waits.
- Output lengths (``record_output``) are queued in memory and folded into shared histograms every
  ``lengths_sync_s`` by a script that rides the refresh's pipeline (``gateway.state.redis.lengths``); ``lengths``
  reads the copy that script returned.

Everything is also fed to an in-memory store. While Redis is unreachable, routing reads that
local state (so a Redis outage degrades to N independent gateways, never to errors) and the
shared copy resumes with the first refresh that works.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.domain import BreakerState, Health, ReplicaState
from gateway.outcome import Outcome
from gateway.state.breaker import Breaker
from gateway.state.lengths import LengthEstimates
from gateway.state.observations import time_per_output_token
from gateway.state.outcomes import classify
from gateway.state.redis import scripts
from gateway.state.redis.lengths import SharedLengths
from gateway.state.redis.link import Arg, RedisLink, StoreUnavailable
from gateway.state.store import Entry, InMemoryStateStore, StoreSettings
from gateway.state.vllm_metrics import VllmStats

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SharedRecord:
    """One replica as Redis last told this gateway (fields as in ``gateway.state.redis.scripts``)."""

    fields: Mapping[str, str]
    # Requests the *other* live gateways had in flight at the last refresh (this gateway's own
    # count is always exact, from memory).
    others_in_flight: int

    def breaker(self) -> Breaker:
        f = self.fields
        probe = f.get("b_probe")
        return Breaker(
            state=BreakerState(f.get("b_state", "closed")),
            consecutive_failures=int(f.get("b_fail", 0)),
            opened_at=float(f.get("b_open", 0.0)),
            cooldown_s=float(f.get("b_cool", 0.0)),
            probe_until=None if probe is None else float(probe),
        )

    def mean(self, name: str) -> float | None:
        weight = float(self.fields.get(f"o_{name}_w", 0.0))
        return float(self.fields[f"o_{name}_t"]) / weight if weight > 0 else None

    def view(self, replica_id: str, now: float, stale_after_s: float, mine: int) -> ReplicaState:
        """The routing view of this record at ``now`` (stale health and stats read unknown)."""
        f = self.fields
        health = Health.UNKNOWN
        if "h_ok" in f and now < float(f["h_at"]) + stale_after_s:
            health = Health.UP if f["h_ok"] == "1" else Health.DOWN
        fresh = "s_at" in f and now < float(f["s_at"]) + stale_after_s
        return ReplicaState(
            replica_id=replica_id,
            health=health,
            breaker=self.breaker().view(now),
            in_flight=self.others_in_flight + mine,
            running=_count(f.get("s_run")) if fresh else None,
            waiting=_count(f.get("s_wait")) if fresh else None,
            kv_cache_usage=None if not fresh or "s_kv" not in f else float(f["s_kv"]),
            ttft_s=self.mean("ttft"),
            tpot_s=self.mean("tpot"),
            error_rate=self.mean("err") or 0.0,
            # As in memory: known while the scrape is fresh. Every gateway reads the same start
            # time, so each sees a restart that another gateway's monitor scraped.
            started_at=float(f["s_start"]) if fresh and "s_start" in f else None,
        )


def _count(text: str | None) -> int | None:
    return None if text is None else int(float(text))


def decode_hash(flat: list[bytes]) -> dict[str, str]:
    """HGETALL's flat reply as a dict of strings."""
    return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}


class RedisStateStore:
    """``StateStore`` over Redis; see the module docstring. ``gateway_id`` must be unique among the
    gateways sharing ``prefix``; ``refresh_s`` bounds how old a snapshot can be."""

    def __init__(
        self,
        link: RedisLink,
        settings: StoreSettings | None = None,
        *,
        gateway_id: str,
        prefix: str = "duet:",
        refresh_s: float = 0.1,
        lengths_sync_s: float = 1.0,
    ) -> None:
        self._link = link
        self._settings = settings or StoreSettings()
        self._gateway_id = gateway_id
        self._prefix = prefix
        self._refresh_s = refresh_s
        self._local = InMemoryStateStore(self._settings, clock=time.time)
        self._shared: dict[str, SharedRecord] = {}
        self._mine: dict[str, int] = {}  # this gateway's requests in flight, per replica
        self._known: set[str] = set()  # replicas this gateway tracks (refreshed)
        self._refresher: asyncio.Task[None] | None = None
        self._lengths = SharedLengths(self._settings.lengths, sync_s=lengths_sync_s)
        self._lengths_due = 0.0  # monotonic time of the next exchange of output lengths

    def now(self) -> float:
        return time.time()

    @property
    def shared(self) -> bool:
        """Whether snapshots come from Redis (False: Redis is down, local state is used)."""
        return self._link.up

    async def start(self) -> None:
        """Start the link and the background refresh (call inside the running loop)."""
        self._link.start()
        if self._refresher is None:
            self._refresher = asyncio.create_task(self._refresh_forever(), name="duet-redis-refresh")

    def snapshot(self) -> Mapping[str, ReplicaState]:
        if not self._link.up:
            local = self._local.snapshot()
            return {rid: dataclasses.replace(s, in_flight=self._mine.get(rid, 0)) for rid, s in local.items()}
        now, stale = time.time(), self._settings.stale_after_s
        mine = self._mine
        return {rid: record.view(rid, now, stale, mine.get(rid, 0)) for rid, record in self._shared.items()}

    async def begin(self, replica_id: str) -> Entry:
        self._known.add(replica_id)
        record = self._shared.get(replica_id)
        if not self._link.up or record is None:
            return self._count(await self._local.begin(replica_id))
        position = record.breaker().position(time.time())
        if position is BreakerState.CLOSED:  # the count goes out with the next refresh
            return self._count(Entry(replica_id, entered=True))
        if position is BreakerState.OPEN:
            return Entry(replica_id, entered=False, reason="circuit breaker open")
        return self._count(await self._claim(replica_id))

    async def finish(self, outcome: Outcome) -> None:
        rid = outcome.replica_id
        if rid in self._mine:
            self._mine[rid] = max(0, self._mine[rid] - 1)
        await self._local.finish(outcome)
        kind = classify(outcome)
        tpot = time_per_output_token(outcome, ttft_guess_s=outcome.predicted_ttft_s or 0.0)  # non-stream too
        breaker = self._settings.breaker
        args: list[Arg] = [
            self._gateway_id, time.time(), kind.value,
            "" if outcome.ttft_s is None else outcome.ttft_s, "" if tpot is None else tpot,
            self._settings.half_life_s, breaker.failure_threshold, breaker.cooldown_s, breaker.max_cooldown_s,
            breaker.backoff,
        ]
        self._link.send(scripts.FINISH, [self._record_key(rid)], args)

    async def record_health(self, replica_id: str, healthy: bool, at: float) -> None:
        self._known.add(replica_id)
        await self._local.record_health(replica_id, healthy, at)
        self._link.send(scripts.HEALTH, [self._record_key(replica_id)], [1 if healthy else 0, at])

    def record_output(self, model: str, task: str, tokens: int) -> None:
        self._local.record_output(model, task, tokens)  # what routing reads while Redis is away
        self._lengths.add(model, task, tokens)

    def lengths(self) -> LengthEstimates:
        """Every gateway's answers when Redis answers; this gateway's own otherwise."""
        if self._link.up and self._lengths.loaded:
            return self._lengths
        return self._local.lengths()

    async def record_stats(self, replica_id: str, stats: VllmStats, at: float) -> None:
        self._known.add(replica_id)
        await self._local.record_stats(replica_id, stats, at)
        values = [stats.running, stats.waiting, stats.kv_cache_usage, stats.process_start_time_s]
        self._link.send(scripts.STATS, [self._record_key(replica_id)], [at, *("" if v is None else v for v in values)])

    async def forget(self, replica_id: str) -> None:
        """Stop tracking a replica here; its shared record stays for gateways that still use it."""
        self._known.discard(replica_id)
        self._shared.pop(replica_id, None)
        self._mine.pop(replica_id, None)
        await self._local.forget(replica_id)

    async def aclose(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.wait({self._refresher}, timeout=1.0)
        await self._link.aclose()
        await self._local.aclose()

    async def refresh(self) -> None:
        """Pull every tracked replica's shared record once. Raises StoreUnavailable."""
        replicas = sorted(self._known)
        keys = [self._prefix + "gw:" + self._gateway_id]
        for rid in replicas:
            keys += [self._record_key(rid), self._inflight_key(rid)]
        args: list[Arg] = [self._gateway_id, liveness_ttl_ms(self._refresh_s), self._prefix + "gw:"]
        published = [self._mine.get(rid, 0) for rid in replicas]
        refreshing = self._link.call(scripts.REFRESH, keys, [*args, *published])
        if time.monotonic() < self._lengths_due:
            reply = await refreshing
        else:
            reply = await self._exchange_lengths(refreshing)
        shared = {rid: SharedRecord(decode_hash(reply[2 * i]), int(reply[2 * i + 1]) - published[i])
                  for i, rid in enumerate(replicas)}
        self._shared = {rid: record for rid, record in shared.items() if rid in self._known}

    async def _exchange_lengths(self, refreshing: Awaitable[Any]) -> Any:
        """Run the lengths script beside the refresh (both in one pipeline: ``call`` queues them
        together); return the refresh's reply. Raises StoreUnavailable."""
        lengths_args, taken = self._lengths.take()
        exchanging = self._link.call(scripts.LENGTHS, [self._prefix + "lengths"], lengths_args)
        results = await asyncio.gather(refreshing, exchanging, return_exceptions=True)
        refreshed: Any = results[0]
        exchanged: Any = results[1]
        if isinstance(exchanged, BaseException):
            self._lengths.restore(taken)  # not applied (or not known to be): sent again next time
        else:
            self._lengths.apply(exchanged)
            self._lengths_due = time.monotonic() + self._lengths.sync_s
        for outcome in (refreshed, exchanged):
            if isinstance(outcome, BaseException):
                raise outcome
        return refreshed

    async def _claim(self, replica_id: str) -> Entry:
        """Run the atomic begin script: the breaker's cooldown has passed, one gateway probes."""
        keys = [self._record_key(replica_id)]
        try:
            permit, flat = await self._link.call(scripts.BEGIN, keys, [self._gateway_id, time.time(), self._probe_timeout()])
        except StoreUnavailable:
            return await self._local.begin(replica_id)
        record = self._shared.get(replica_id)
        self._shared[replica_id] = SharedRecord(decode_hash(flat), record.others_in_flight if record else 0)
        if permit == b"refused":
            return Entry(replica_id, entered=False, reason="circuit breaker open")
        return Entry(replica_id, entered=True, probe=permit == b"probe")

    def _count(self, entry: Entry) -> Entry:
        if entry.entered:
            self._mine[entry.replica_id] = self._mine.get(entry.replica_id, 0) + 1
        return entry

    def _probe_timeout(self) -> float:
        return self._settings.breaker.probe_timeout_s

    def _record_key(self, replica_id: str) -> str:
        return f"{self._prefix}replica:{replica_id}"

    def _inflight_key(self, replica_id: str) -> str:
        return f"{self._prefix}inflight:{replica_id}"

    async def _refresh_forever(self) -> None:
        while True:
            try:
                await self.refresh()
            except StoreUnavailable:
                pass  # the link logged it and backs off; snapshots read local state meanwhile
            except Exception:  # a bug here must not stop refreshing; it is logged every time
                log.exception("refreshing shared replica state failed")
            await asyncio.sleep(self._refresh_s)


def liveness_ttl_ms(refresh_s: float) -> int:
    """How long a gateway counts as alive after its last refresh: many refreshes, at least 1 s."""
    return max(1000, math.ceil(refresh_s * 20_000))
