"""The replica-state store: what the monitor learns and what the proxy observes, read back by
routing as one snapshot.

``StateStore`` is the interface; ``InMemoryStateStore`` is the embedded default for one gateway.
A shared (Redis) store fits the same shape: ``snapshot`` is synchronous because routing is, so a
shared store serves it from a local copy refreshed in the background; ``begin`` and ``finish`` are
one round trip each (one script: in-flight count, breaker claim, observations).

The proxy's contract: call ``begin`` before forwarding; when it admits, call ``finish`` exactly
once with the outcome (in a ``finally``), and when it refuses, try the next ranked replica.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from gateway.domain import EngineRole, Health, ReplicaState
from gateway.outcome import Outcome
from gateway.state import breaker as breakers
from gateway.state.breaker import Breaker, BreakerPolicy, Permit
from gateway.state.lengths import LengthEstimates, LengthSettings, OutputLengths
from gateway.state.observations import Observations, observe
from gateway.state.outcomes import OutcomeKind, classify
from gateway.state.vllm_metrics import VllmStats, prefix_hit_rate_between


@dataclass(frozen=True, slots=True)
class Entry:
    """``begin``'s answer: whether the request may go to the replica (its breaker lets it in).
    ``probe``: let in as a half-open breaker's single probe."""

    replica_id: str
    entered: bool
    probe: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """How replica state ages and reacts.

    ``stale_after_s``: health and scraped stats older than this are unknown (a few check
    intervals: one missed check is not an outage, a dead monitor must not leave replicas UP).
    ``half_life_s``: how fast observed latency and error rate forget (see observations).
    """

    stale_after_s: float = 5.0
    half_life_s: float = 30.0
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)
    lengths: LengthSettings = field(default_factory=LengthSettings)


class StateStore(Protocol):
    """Replica state shared between the monitor (writer), the proxy (writer) and routing (reader).

    ``at`` arguments are read from ``now()``, the store's clock: monotonic in memory, wall time
    when gateways share a store.
    """

    def now(self) -> float:
        """The clock this store ages state by."""
        ...

    def snapshot(self) -> Mapping[str, ReplicaState]:
        """Every known replica's state, O(replicas), no I/O. Stale health reads UNKNOWN."""
        ...

    async def begin(self, replica_id: str) -> Entry:
        """Count a request in flight and pass it through the replica's breaker."""
        ...

    async def finish(self, outcome: Outcome) -> None:
        """Count an admitted request out and feed its outcome to observations and breaker."""
        ...

    async def record_health(self, replica_id: str, healthy: bool, at: float) -> None:
        """Record a health check's result taken at ``at``."""
        ...

    async def record_stats(self, replica_id: str, stats: VllmStats, at: float) -> None:
        """Record a ``/metrics`` scrape taken at ``at``."""
        ...

    async def forget(self, replica_id: str) -> None:
        """Drop a replica that left the config (its late outcomes are then ignored)."""
        ...

    def record_output(self, model: str, task: str, tokens: int) -> None:
        """A finished answer's output length, for the task's length estimate (never waits)."""
        ...

    def lengths(self) -> LengthEstimates:
        """Each (model, task)'s expected output length, learned from ``record_output``."""
        ...

    async def aclose(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


@dataclass(slots=True)
class _Record:
    """One replica's state in memory. Mutable holder of immutable parts, owned by one store."""

    in_flight: int = 0
    health_ok: bool | None = None
    health_at: float = -math.inf
    stats: VllmStats | None = None
    stats_at: float = -math.inf
    # Prompt tokens per second the replica prefilled between its last two scrapes (smoothed).
    prefill_rate: float | None = None
    # Fraction of prompt tokens its prefix cache served between the last two scrapes with queries.
    prefix_hit_rate: float | None = None
    breaker: Breaker = field(default_factory=Breaker)
    observations: Observations = field(default_factory=Observations)
    # The last ReplicaState built and until when it holds. Building one costs microseconds and a
    # snapshot per request would rebuild every replica; most have not changed since the last.
    view: ReplicaState | None = None
    view_until: float = -math.inf

    def changed(self) -> None:
        """Drop the cached view; every write calls this."""
        self.view = None


class InMemoryStateStore:
    """Replica state for one gateway process. Every method runs without awaiting, so each is
    atomic on the event loop: a half-open probe is claimed by exactly one ``begin``."""

    def __init__(
        self,
        settings: StoreSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings or StoreSettings()
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._lengths = OutputLengths(self._settings.lengths)

    def now(self) -> float:
        return self._clock()

    def snapshot(self) -> Mapping[str, ReplicaState]:
        now = self._clock()
        return {rid: self._state(rid, record, now) for rid, record in self._records.items()}

    async def begin(self, replica_id: str) -> Entry:
        record = self._record(replica_id)
        record.changed()
        record.breaker, permit = breakers.admit(
            record.breaker, self._settings.breaker, self._clock()
        )
        if permit is Permit.REFUSED:
            return Entry(replica_id, entered=False, reason="circuit breaker open")
        record.in_flight += 1
        return Entry(replica_id, entered=True, probe=permit is Permit.PROBE)

    async def finish(self, outcome: Outcome) -> None:
        record = self._records.get(outcome.replica_id)
        if record is None:  # forgotten while the request ran
            return
        record.changed()
        now = self._clock()
        kind = classify(outcome)
        record.in_flight = max(0, record.in_flight - 1)
        record.observations = observe(
            record.observations, outcome, kind, now, self._settings.half_life_s
        )
        record.breaker = _feed_breaker(record.breaker, kind, self._settings.breaker, now)

    async def record_health(self, replica_id: str, healthy: bool, at: float) -> None:
        record = self._record(replica_id)
        if at >= record.health_at:  # a late, older result must not overwrite a newer one
            record.health_ok, record.health_at = healthy, at
            record.changed()

    async def record_stats(self, replica_id: str, stats: VllmStats, at: float) -> None:
        record = self._record(replica_id)
        if at >= record.stats_at:
            record.prefill_rate = prefill_rate(record.stats, record.stats_at, stats, at, record.prefill_rate)
            if (hit_rate := prefix_hit_rate_between(record.stats, stats)) is not None:
                record.prefix_hit_rate = hit_rate  # an idle interval (no queries) keeps the last measured
            record.stats, record.stats_at = stats, at
            record.changed()

    async def forget(self, replica_id: str) -> None:
        self._records.pop(replica_id, None)

    def record_output(self, model: str, task: str, tokens: int) -> None:
        self._lengths.add(model, task, tokens)

    def lengths(self) -> OutputLengths:
        return self._lengths

    async def aclose(self) -> None:
        self._records.clear()

    def _record(self, replica_id: str) -> _Record:
        record = self._records.get(replica_id)
        if record is None:
            record = self._records[replica_id] = _Record()
        return record

    def _state(self, replica_id: str, record: _Record, now: float) -> ReplicaState:
        if record.view is None or now >= record.view_until:
            record.view = self._build(replica_id, record, now)
            record.view_until = self._next_change(record, now)
        return record.view

    def _build(self, replica_id: str, record: _Record, now: float) -> ReplicaState:
        stale = self._settings.stale_after_s
        # Fresh means ``now < at + stale``, the same expression ``_next_change`` uses.
        stats = record.stats if now < record.stats_at + stale else None
        observations = record.observations
        return ReplicaState(
            replica_id=replica_id,
            health=_health(record.health_ok, now < record.health_at + stale),
            breaker=record.breaker.view(now),
            in_flight=record.in_flight,
            running=stats.running if stats else None,
            waiting=stats.waiting if stats else None,
            kv_cache_usage=stats.kv_cache_usage if stats else None,
            prefill_tokens_per_s=record.prefill_rate if stats else None,
            ttft_s=observations.ttft_s,
            tpot_s=observations.tpot_s,
            error_rate=observations.error_rate,
            ttft_bias=observations.ttft_bias,
            tpot_bias=observations.tpot_bias,
            started_at=stats.process_start_time_s if stats else None,
            prefix_cache_hit_rate=record.prefix_hit_rate if stats else None,
            role=_role(stats.engine_role) if stats else None,
            chunk_budget=stats.chunk_budget if stats else None,
        )

    def _next_change(self, record: _Record, now: float) -> float:
        """When a replica's view changes with no write: health or stats going stale, or the
        breaker moving on its own."""
        stale = self._settings.stale_after_s
        ages = (t for t in (record.health_at + stale, record.stats_at + stale) if t > now)
        return min([record.breaker.next_change(now), *ages])


def prefill_rate(
    before: VllmStats | None, before_at: float, after: VllmStats, at: float, smoothed: float | None
) -> float | None:
    """Prompt tokens per second from two scrapes' ``prompt_tokens_total``, averaged with the
    previous value (half each): a one-interval burst moves it, a single scrape does not own it."""
    if before is None or before.prompt_tokens_total is None or after.prompt_tokens_total is None or at <= before_at:
        return smoothed
    delta = after.prompt_tokens_total - before.prompt_tokens_total
    if delta < 0:  # the replica restarted: its counters did too
        return smoothed
    rate = delta / (at - before_at)
    return rate if smoothed is None else 0.5 * (smoothed + rate)


def _health(ok: bool | None, fresh: bool) -> Health:
    if ok is None or not fresh:
        return Health.UNKNOWN
    return Health.UP if ok else Health.DOWN


def _feed_breaker(
    breaker: Breaker, kind: OutcomeKind, policy: BreakerPolicy, now: float
) -> Breaker:
    """Move a breaker by one outcome (see ``gateway.state.outcomes`` for which kind counts)."""
    if kind is OutcomeKind.SUCCESS:
        return breakers.record_success(breaker, now)
    if kind is OutcomeKind.FAILURE:
        return breakers.record_failure(breaker, policy, now)
    return breakers.release_probe(breaker)


def _role(reported: str | None) -> EngineRole | None:
    """The role a replica reported, or None (not reported, or a role this gateway does not know)."""
    try:
        return None if reported is None else EngineRole(reported)
    except ValueError:
        return None
