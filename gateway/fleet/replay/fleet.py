"""A replay's fleet as it changes, and what it cost.

The replay asks its fleet, between events, whether replicas join routing or leave it
(``FleetControl``), handing it the demand the gateway's own ``DemandKeeper`` counted on the
replay's lifecycle hooks. A plain replay's fleet never changes and never reads it
(``FixedFleet``, the null object); an autoscaled one (``gateway.fleet.replay.autoscale``) asks for
and removes replicas as the gateway's desired-replicas gauge, read from that demand, and an HPA
on it would. Each replica's life is kept (``ReplicaLife``), and the run's ``FleetTimeline``
says how many replicas each variant had when, the replica-seconds paid and their bill."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.autoscaling import InMemoryDemand
from gateway.fleet.world.replica_sets import ReplicaSet
from gateway.flow import Replica


@dataclass(frozen=True, slots=True)
class FleetChange:
    """What changes now: replicas that join routing (ready), and replicas (by id) that stop
    taking new requests and leave once their requests ended."""

    joined: tuple[Replica, ...] = ()
    withdrawn: tuple[str, ...] = ()


class FleetControl(Protocol):
    """What the replay asks of its fleet. Times are the replay's virtual seconds."""

    def next_change_s(self) -> float:
        """When the fleet next changes (``math.inf``: not before the run ends)."""
        ...

    def change(self, now: float, demand: InMemoryDemand) -> FleetChange:
        """The change due at ``now`` (called when ``next_change_s`` is reached). ``demand``: what
        the replay's requests asked of the fleet up to ``now``, counted as the gateway counts it."""
        ...

    def drained(self, replica_id: str, at: float) -> None:
        """A withdrawn replica's last request ended at ``at`` (at once if it had none)."""
        ...


class FixedFleet:
    """The fleet of a plain replay: the config's replicas, from start to end."""

    def next_change_s(self) -> float:
        return math.inf

    def change(self, now: float, demand: InMemoryDemand) -> FleetChange:
        return FleetChange()

    def drained(self, replica_id: str, at: float) -> None:
        pass


@dataclass(slots=True)
class ReplicaLife:
    """One replica: asked for at ``asked_s`` (its pod holds its GPUs from then, so it is paid
    for), routable from ``ready_s``, asked to leave at ``removed_s`` (no new requests from then)
    and gone at ``left_s`` (when its last request ended; at once when it had none, or was still
    loading). None: not yet."""

    replica: Replica
    asked_s: float
    ready_s: float
    removed_s: float | None = None
    left_s: float | None = None

    @property
    def variant(self) -> str:
        return self.replica.variant

    def asked_at(self, at: float) -> bool:
        """Counted in its Deployment's replicas at ``at`` (loading or ready, not leaving)."""
        return self.asked_s <= at and (self.removed_s is None or at < self.removed_s)

    def ready_at(self, at: float) -> bool:
        """Routable at ``at``."""
        return self.ready_s <= at and (self.removed_s is None or at < self.removed_s)

    def draining_at(self, at: float) -> bool:
        """Asked to leave at ``at`` and still finishing requests."""
        return self.removed_s is not None and self.removed_s <= at and (self.left_s is None or at < self.left_s)

    def paid_s(self, until_s: float) -> float:
        """Seconds paid for up to ``until_s``: from the ask until it left."""
        end = until_s if self.left_s is None else min(self.left_s, until_s)
        return max(0.0, end - self.asked_s)


@dataclass(frozen=True, slots=True)
class FleetPoint:
    """One variant's replicas from ``at_s`` until its next point: asked for (loading or ready),
    ready (routable) and draining (withdrawn, still finishing requests)."""

    at_s: float
    asked: int
    ready: int
    draining: int


@dataclass(frozen=True, slots=True)
class GaugeReading:
    """An autoscaler's reading at ``at_s``: the desired replicas the gauge showed for a variant
    and the count its HPA set."""

    at_s: float
    variant: str
    desired: int
    scaled_to: int


@dataclass(frozen=True, slots=True)
class FleetTimeline:
    """A run's fleet from 0 to ``end_s``: every replica's life, and the autoscaler's readings."""

    lives: tuple[ReplicaLife, ...]
    end_s: float
    readings: tuple[GaugeReading, ...] = ()

    @property
    def variants(self) -> tuple[str, ...]:
        return tuple(sorted({life.variant for life in self.lives}))

    def points(self, variant: str) -> tuple[FleetPoint, ...]:
        """The variant's replica counts at each time one of them changed, in order."""
        lives = [life for life in self.lives if life.variant == variant]
        times = sorted({0.0, *(t for life in lives for t in _moments(life) if t <= self.end_s)})
        points: list[FleetPoint] = []
        for at in times:
            point = FleetPoint(at, sum(life.asked_at(at) for life in lives), sum(life.ready_at(at) for life in lives),
                               sum(life.draining_at(at) for life in lives))
            if not points or (point.asked, point.ready, point.draining) != (points[-1].asked, points[-1].ready,
                                                                            points[-1].draining):
                points.append(point)
        return tuple(points)

    def replica_seconds(self, variant: str | None = None) -> float:
        """Replica-seconds paid up to ``end_s`` (one variant's, or all)."""
        return sum(life.paid_s(self.end_s) for life in self.lives if variant in (None, life.variant))

    def fleet_usd(self, replica_set: ReplicaSet) -> float | None:
        """What the replica-seconds cost (``ReplicaSet.fleet_usd`` per variant); None for a set
        without replica costs."""
        total = 0.0
        for variant in self.variants:
            usd = replica_set.fleet_usd({variant: 1}, self.replica_seconds(variant))
            if usd is None:
                return None
            total += usd
        return total

    def summary(self, replica_set: ReplicaSet) -> dict[str, object]:
        """Per variant: replica-hours and the most replicas asked for at once; and the bill."""
        usd = self.fleet_usd(replica_set)
        return {
            "span_s": round(self.end_s, 3),
            "replica_hours": {v: round(self.replica_seconds(v) / 3600.0, 4) for v in self.variants},
            "peak_asked": {v: max(p.asked for p in self.points(v)) for v in self.variants},
            "fleet_usd": None if usd is None else round(usd, 4),
        }


def _moments(life: ReplicaLife) -> Iterable[float]:
    return (t for t in (life.asked_s, life.ready_s, life.removed_s, life.left_s) if t is not None)


def initial_lives(replicas: Sequence[Replica], at: float) -> list[ReplicaLife]:
    """The replicas a run starts with: asked for and ready at ``at``."""
    return [ReplicaLife(replica, at, at) for replica in replicas]
