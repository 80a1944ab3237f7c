"""The director's validate-then-escalate step on plain data: which answers it looks at, where a
broken one goes, and that every attempt ends exactly once in the ledgers whatever happens."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from gateway.domain import Budget, Prediction, Replica
from gateway.flow.escalation import escalation_headers, standard_within_budget
from gateway.flow.exchange import Handling
from gateway.outcome import AttemptFailure, Outcome
from tests.gateway.flow.test_director import DEMO, Rig

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TOOLS = {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [WEATHER], "max_tokens": 32}
ROOMY = {"x-duet-ttft-budget-ms": "60000", "x-duet-latency-budget-ms": "60000"}


def completion(arguments: str) -> bytes:
    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    return orjson.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [call]}}],
                         "usage": {"prompt_tokens": 40, "completion_tokens": 12}})


GOOD, BROKEN = completion('{"city": "Oslo"}'), completion('{"city": "Oslo"')


@dataclass
class Whole:
    """A whole non-stream answer, as the proxy's Answer carries it."""

    replica: Replica
    body: bytes
    status: int = 200
    started_at: float = 0.0


@dataclass
class Replicas:
    """A transport whose answer depends on the replica's variant: a body, or a failure status."""

    by_variant: dict[str, bytes | int]
    tried: list[str] = field(default_factory=list)

    async def attempt(self, replica: Replica) -> Whole | AttemptFailure:
        self.tried.append(replica.variant)
        answer = self.by_variant[replica.variant]
        if isinstance(answer, int):
            return AttemptFailure(replica.id, answer, "scripted", 0.01)
        return Whole(replica, answer)


def standard_fast_as_fast() -> dict[str, Any]:
    """The demo with the standard predicted as fast as the fast variant (still dearer: the router
    picks fast), so a roomy budget fits it after the fast answer."""
    raw = copy.deepcopy(DEMO)
    variants = raw["models"]["smollm2"]["variants"]
    variants["standard"]["speed"] = dict(variants["fast"]["speed"])
    return raw


def run(raw: dict[str, Any], replicas: Replicas, body: dict[str, Any], headers: dict[str, str]) -> tuple[Rig, Any, Whole]:
    async def scenario() -> tuple[Rig, Any, Whole]:
        rig = Rig(raw)
        await rig.up()
        exchange = rig.open(body, headers)
        first = await rig.director.dispatch(exchange, replicas)
        answer = await rig.director.validate(exchange, first, replicas)
        rig.director.first_token(exchange)
        await rig.director.finish(exchange, Outcome(answer.replica.id, True, 200, None, 0.1, 40, 12))
        return rig, exchange, answer

    return asyncio.run(scenario())


def settled(rig: Rig) -> bool:
    """No attempt left open anywhere: in-flight counts, prefill backlog and decode ledger empty."""
    return (all(s.in_flight == 0 for s in rig.store.snapshot().values()) and not dict(rig.backlog.tokens)
            and not dict(rig.decodes.least_slack))


def test_a_broken_fast_answer_is_answered_by_the_standard_and_both_attempts_end_once() -> None:
    replicas = Replicas({"fast": BROKEN, "standard": GOOD})
    rig, exchange, answer = run(standard_fast_as_fast(), replicas, TOOLS, ROOMY)
    assert replicas.tried == ["fast", "standard"] and answer.body == GOOD
    assert exchange.escalation.action is Handling.ESCALATED and exchange.escalation.reason == "invalid-tool-arguments"
    assert exchange.escalation.set_aside_variant == "fast" and exchange.escalation.set_aside_cost_usd > 0
    assert exchange.failed_attempts == 0 and exchange.attempts == 2
    assert escalation_headers(exchange.escalation) == [(b"x-duet-escalated", b"invalid-tool-arguments")]
    assert settled(rig)


def test_a_valid_fast_answer_is_not_touched() -> None:
    replicas = Replicas({"fast": GOOD, "standard": GOOD})
    rig, exchange, answer = run(standard_fast_as_fast(), replicas, TOOLS, ROOMY)
    assert replicas.tried == ["fast"] and exchange.escalation is None and settled(rig)


def test_when_the_standard_fails_the_fast_answer_goes_out_and_says_so() -> None:
    replicas = Replicas({"fast": BROKEN, "standard": 503})
    rig, exchange, answer = run(standard_fast_as_fast(), replicas, TOOLS, ROOMY)
    assert replicas.tried == ["fast", "standard"] and answer.body == BROKEN
    assert exchange.attempt.variant.name == "fast"  # the held attempt is the one that finishes
    assert exchange.escalation.action is Handling.KEPT_STANDARD_FAILED
    assert escalation_headers(exchange.escalation)[1] == (b"x-duet-escalation-skipped", b"kept-standard-failed")
    assert settled(rig)


def test_without_budget_left_for_the_standard_the_fast_answer_is_kept() -> None:
    raw = standard_fast_as_fast()
    raw["models"]["smollm2"]["variants"]["standard"]["speed"]["prefill_tokens_per_s"] = 0.05  # predicted far too slow
    replicas = Replicas({"fast": BROKEN, "standard": GOOD})
    rig, exchange, answer = run(raw, replicas, TOOLS, ROOMY)
    assert replicas.tried == ["fast"] and exchange.escalation.action is Handling.KEPT_NO_BUDGET and settled(rig)


@pytest.mark.parametrize(("body", "headers"), [
    ({**TOOLS, "model": "smollm2:fast"}, ROOMY),  # pinned: the client chose fast
    ({**TOOLS, "stream": True}, ROOMY),  # a stream that did not opt in
    ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}, {**ROOMY, "x-duet-task": "extraction"}),
])
def test_answers_the_step_never_looks_at(body: dict[str, Any], headers: dict[str, str]) -> None:
    replicas = Replicas({"fast": BROKEN, "standard": GOOD})
    rig, exchange, _ = run(standard_fast_as_fast(), replicas, body, headers)
    assert replicas.tried == ["fast"] and exchange.escalation is None


@pytest.mark.parametrize(("budget", "elapsed_ms", "fits"), [
    (Budget(), 10_000, True),  # no target: any prediction fits
    (Budget(ttft_ms=5000), 1000, True),  # 4 s left, the whole answer predicted in 3 s
    (Budget(ttft_ms=5000), 2500, False),  # 2.5 s left: the start target is held against the predicted end
    (Budget(latency_ms=3500), 400, True),
    (Budget(latency_ms=3500), 600, False),
])
def test_the_budget_left_is_held_against_the_predicted_whole_answer(budget: Budget, elapsed_ms: float, fits: bool) -> None:
    rig = Rig(standard_fast_as_fast())
    asyncio.run(rig.up())
    exchange = rig.open(TOOLS)
    plan = exchange.plan
    standard = rig.replicas["standard"]
    predictions = {standard.id: Prediction(ttft_ms=100.0, e2e_ms=3000.0, tpot_ms=20.0)}
    plan = type(plan)(plan.target, type(plan.profile)(**{**_fields(plan.profile), "budget": budget}), plan.candidates,
                      type(plan.decision)(**{**_fields(plan.decision), "predictions": predictions}))
    assert standard_within_budget(plan, elapsed_ms) == ((standard,) if fits else ())


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}
