"""A variant's replicas as a fitted line in the model's load, instead of one utilisation.

``duet plan-day`` (``gateway/fleet/capacity/curve.py``) finds the cheapest fleet of the plan's
configuration at several rates of the same traffic and fits, per variant, the replicas needed
against the replicas the gauge's arithmetic says that traffic keeps fully busy over all the
model's variants (``busy``): a line through the midpoints ``n - 0.5`` (the search shows that
``n - 1`` replicas miss and ``n`` meet, so the need lies between). One utilisation measured at the
peak overstates what quieter periods need wherever a replica's headroom is not proportional to
its load (4-GPU granularity, the TPOT tail that binds at every load); a line has an intercept.

The load is the model's, not the variant's own: the gauge places each task on the cheapest
variant parity allows, so a variant the router also uses (a standard replica taking the prompts
a fast one would stall on) has no busy replicas of its own to scale on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CapacityCurve:
    """Replicas = ``intercept`` + ``per_busy_replica`` x the model's busy replicas, rounded up,
    never below 0; no demand asks for none (the floors add what parity and ``min_replicas`` keep)."""

    intercept: float
    per_busy_replica: float

    def __post_init__(self) -> None:
        if self.per_busy_replica < 0 or not math.isfinite(self.intercept + self.per_busy_replica):
            raise ValueError(f"capacity curve {self.intercept} + {self.per_busy_replica} x busy: a finite line "
                             "that does not fall with the load")

    def replicas(self, busy: float) -> int:
        if busy <= 0:
            return 0
        return max(0, math.ceil(self.intercept + self.per_busy_replica * busy - 1e-9))
