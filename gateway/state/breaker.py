"""A circuit breaker per replica, as immutable values and pure transition functions.

    CLOSED --(failure_threshold consecutive failures)--> OPEN
    OPEN   --(cooldown elapsed)--> HALF_OPEN            (derived from the clock, no timer)
    HALF_OPEN: one probe admitted at a time
        probe succeeds --> CLOSED (cooldown reset)
        probe fails    --> OPEN   (cooldown multiplied by ``backoff``, up to ``max_cooldown_s``)

Time is passed in (``now``, seconds on any monotonic clock), so the machine is testable without
sleeping and the same values can live in memory or in Redis. Callers make a claim atomic by
applying ``admit`` under whatever serialises their updates (the event loop, a Redis script).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum

from gateway.domain import BreakerState


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """When a breaker opens and how long it stays open.

    ``probe_timeout_s`` bounds how long a claimed probe blocks others: a probe whose result never
    comes back (its gateway died, a bug skipped ``finish``) must not keep a replica out forever.
    """

    failure_threshold: int = 5
    cooldown_s: float = 5.0
    max_cooldown_s: float = 60.0
    backoff: float = 2.0
    probe_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if not 0 < self.cooldown_s <= self.max_cooldown_s:
            raise ValueError("need 0 < cooldown_s <= max_cooldown_s")
        if self.backoff < 1:
            raise ValueError("backoff must be at least 1")


class Permit(Enum):
    """What ``admit`` decided for one request."""

    ALLOWED = "allowed"
    PROBE = "probe"  # admitted as the single half-open probe
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Breaker:
    """One replica's breaker. ``state`` is as last stored; ``position(now)`` is the real one."""

    state: BreakerState = BreakerState.CLOSED
    consecutive_failures: int = 0
    opened_at: float = 0.0
    cooldown_s: float = 0.0  # the current cooldown, meaningful while OPEN / HALF_OPEN
    probe_until: float | None = None  # a probe is out until then (HALF_OPEN only)

    def position(self, now: float) -> BreakerState:
        """The breaker's state at ``now``: OPEN turns HALF_OPEN once its cooldown has passed."""
        if self.state is BreakerState.OPEN and now >= self.opened_at + self.cooldown_s:
            return BreakerState.HALF_OPEN
        return self.state

    def view(self, now: float) -> BreakerState:
        """The state routing should see: a HALF_OPEN breaker whose probe is out admits nobody,
        so it reads as OPEN and the router ranks other replicas first."""
        position = self.position(now)
        if position is BreakerState.HALF_OPEN and self.probe_out(now):
            return BreakerState.OPEN
        return position

    def next_change(self, now: float) -> float:
        """The earliest time after ``now`` at which ``view`` can change with no event (a
        cooldown ending, a probe timing out); infinity if none. Lets readers cache views."""
        upcoming = [math.inf]
        if self.state is BreakerState.OPEN:
            upcoming.append(self.opened_at + self.cooldown_s)
        if self.probe_until is not None:
            upcoming.append(self.probe_until)
        return min(t for t in upcoming if t > now)

    def probe_out(self, now: float) -> bool:
        """Whether a claimed probe is still out (neither reported back nor timed out)."""
        return self.probe_until is not None and now < self.probe_until


def admit(breaker: Breaker, policy: BreakerPolicy, now: float) -> tuple[Breaker, Permit]:
    """Decide whether a request may go to this replica, claiming the probe when HALF_OPEN."""
    position = breaker.position(now)
    if position is BreakerState.CLOSED:
        return breaker, Permit.ALLOWED
    if position is BreakerState.OPEN or breaker.probe_out(now):
        return breaker, Permit.REFUSED
    probing = replace(
        breaker, state=BreakerState.HALF_OPEN, probe_until=now + policy.probe_timeout_s
    )
    return probing, Permit.PROBE


def record_success(breaker: Breaker, now: float) -> Breaker:
    """A request succeeded: reset the failure run; a half-open breaker closes.

    Results reaching an OPEN breaker are of requests sent before it opened; they are ignored.
    """
    position = breaker.position(now)
    if position is BreakerState.HALF_OPEN:
        return Breaker()
    if position is BreakerState.CLOSED and breaker.consecutive_failures:
        return replace(breaker, consecutive_failures=0)
    return breaker


def record_failure(breaker: Breaker, policy: BreakerPolicy, now: float) -> Breaker:
    """A request failed because of the replica: count it; open at the threshold; a failed
    half-open probe reopens with a longer cooldown."""
    position = breaker.position(now)
    if position is BreakerState.CLOSED:
        failures = breaker.consecutive_failures + 1
        if failures < policy.failure_threshold:
            return replace(breaker, consecutive_failures=failures)
        return _open(failures, now, policy.cooldown_s)
    if position is BreakerState.HALF_OPEN:
        cooldown = min(policy.max_cooldown_s, breaker.cooldown_s * policy.backoff)
        return _open(breaker.consecutive_failures + 1, now, cooldown)
    return breaker


def release_probe(breaker: Breaker) -> Breaker:
    """A request ended saying nothing about the replica's health (a client error, an overload
    refusal): if a probe was out, let the next request probe instead."""
    if breaker.probe_until is None:
        return breaker
    return replace(breaker, probe_until=None)


def _open(failures: int, now: float, cooldown_s: float) -> Breaker:
    return Breaker(
        state=BreakerState.OPEN,
        consecutive_failures=failures,
        opened_at=now,
        cooldown_s=cooldown_s,
    )
