"""Admission control: whether a routed request goes now, waits in the gateway, or is refused.

vLLM queues what it cannot batch in arrival order, blind to priority and deadlines. Duet holds
back what the replicas cannot start right away, so that interactive requests overtake batch ones
and a request that cannot meet its deadline is told so at once (429 with Retry-After) instead of
waiting silently. Degrading to a faster variant happens before any of this, in the objective.

The ruling is pure; ``gateway.flow.waiting_room`` holds the requests told to wait, and the
director (``gateway.flow.director``) runs the loop between the two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from gateway.decision import Decision
from gateway.domain import Priority, ReplicaState, RequestProfile, Variant


class Action(StrEnum):
    FORWARD = "forward"
    WAIT = "wait"
    SHED = "shed"


@dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """``slots``: requests a replica of each variant (by ``model:variant``) takes before the
    gateway holds more back (the variant's ``max_num_seqs``). ``shed_ratio``: a sheddable request whose best
    prediction exceeds its budget by this factor is refused rather than sent."""

    slots: Mapping[str, int]
    shed_ratio: float = 2.0


@dataclass(frozen=True, slots=True)
class Ruling:
    """What admission control says of one routed request, and why."""

    action: Action
    reason: str


def limits_for(variants: Iterable[Variant], shed_ratio: float = 2.0) -> AdmissionLimits:
    return AdmissionLimits({v.key: v.speed.max_num_seqs for v in variants}, shed_ratio)


def has_slot(decision: Decision, snapshot: Mapping[str, ReplicaState], limits: AdmissionLimits) -> bool:
    """Whether any ranked replica has fewer requests in flight than its variant's slots."""
    for replica in decision.ranked:
        state = snapshot.get(replica.id)
        in_flight = 0 if state is None else max(state.in_flight, state.running or 0)
        if in_flight < limits.slots.get(f"{replica.model}:{replica.variant}", 1 << 30):
            return True
    return False


def assess(
    request: RequestProfile, decision: Decision, snapshot: Mapping[str, ReplicaState], limits: AdmissionLimits
) -> Ruling:
    """FORWARD when a ranked replica has a free slot (a sheddable request predicted far over its
    budget is SHED instead); otherwise interactive and batch requests WAIT, sheddable ones SHED."""
    sheddable = request.priority is Priority.SHEDDABLE
    if has_slot(decision, snapshot, limits):
        if sheddable and not decision.meets_budget and _over_by(request, decision) > limits.shed_ratio:
            return Ruling(Action.SHED, "predicted far over budget")
        return Ruling(Action.FORWARD, "slot free")
    if sheddable:
        return Ruling(Action.SHED, "every replica full")
    return Ruling(Action.WAIT, "every replica full")


def _over_by(request: RequestProfile, decision: Decision) -> float:
    """How many times over its budget the head replica's prediction is."""
    if not decision.ranked:
        return float("inf")
    prediction = decision.predictions.get(decision.ranked[0].id)
    return 1.0 if prediction is None else request.budget.over_by(prediction)
