import pytest

from gateway.decision import Decision
from gateway.domain import Prediction, Priority, Replica, ReplicaState
from gateway.flow.admission import Action, AdmissionLimits, assess

from ..routing.factories import request

STD = Replica("m/standard/0", "m", "standard", "http://a")
FAST = Replica("m/fast/0", "m", "fast", "http://b")
LIMITS = AdmissionLimits({"m:standard": 2, "m:fast": 2}, shed_ratio=2.0)


def decision(meets=True, e2e_ms=100.0):
    predictions = {r.id: Prediction(ttft_ms=10, e2e_ms=e2e_ms, tpot_ms=1) for r in (FAST, STD)}
    return Decision("m", "fast", (FAST, STD), "x", meets, predictions)


def snapshot(fast=0, std=0, running=None):
    return {FAST.id: ReplicaState(FAST.id, in_flight=fast, running=running), STD.id: ReplicaState(STD.id, in_flight=std)}


CASES = [
    # (priority, snapshot, decision, action)
    (Priority.INTERACTIVE, snapshot(), decision(), Action.FORWARD),
    (Priority.INTERACTIVE, snapshot(fast=2), decision(), Action.FORWARD),         # standard still has a slot
    (Priority.INTERACTIVE, snapshot(fast=2, std=2), decision(), Action.WAIT),
    (Priority.BATCH, snapshot(fast=2, std=2), decision(), Action.WAIT),
    (Priority.SHEDDABLE, snapshot(fast=2, std=2), decision(), Action.SHED),
    (Priority.SHEDDABLE, snapshot(), decision(meets=False, e2e_ms=230), Action.FORWARD),   # 1.9x its 120 ms budget
    (Priority.SHEDDABLE, snapshot(), decision(meets=False, e2e_ms=150), Action.FORWARD),
    (Priority.INTERACTIVE, snapshot(), decision(meets=False, e2e_ms=1000), Action.FORWARD),  # degrade, never shed interactive
    (Priority.INTERACTIVE, snapshot(fast=0, std=2, running=5), decision(), Action.WAIT),  # vLLM says fast is busy too
]


@pytest.mark.parametrize(("priority", "snap", "dec", "action"), CASES)
def test_assess(priority, snap, dec, action):
    budget = {"latency_budget_ms": 100.0 if priority is not Priority.SHEDDABLE else 120.0}
    verdict = assess(request(priority=priority, **budget), dec, snap, LIMITS)
    assert verdict.action is action, verdict.reason


def test_sheddable_far_over_budget_is_shed():
    verdict = assess(request(priority=Priority.SHEDDABLE, latency_budget_ms=100.0),
                     decision(meets=False, e2e_ms=250), snapshot(), LIMITS)
    assert verdict.action is Action.SHED
