"""Validate, then escalate: the director's step between a fast variant's whole answer and the
client. When the request carries a checkable contract (``gateway.endpoints.contract``) and the answer
breaks it, the request is asked again of the standard variant if the latency budget still has
room for the router's prediction there; else the fast answer goes out unchanged, and says why.

Checked: non-stream answers (status 200) of chat completions, the Responses API and the
Messages API from a variant that is not full precision, unless the request pinned that variant
(the client chose it: ``duet parity`` measures it so), and streamed chat requests whose client
opted in with ``x-duet-validate-stream: 1`` (they are sent upstream whole, checked, and written
back as a stream by the HTTP layer). A stream that did not opt in is never held back, nor is a
Responses or Messages stream (the gateway writes back chat's stream shape only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from gateway.domain import Replica, VariantKind
from gateway.endpoints import ChatBody
from gateway.endpoints.contract import contract_of, violation
from gateway.flow.exchange import Attempt, Escalation, Exchange, Handling
from gateway.flow.plan import Plan
from gateway.outcome import Outcome
from gateway.proxy.sse import usage_of


class WholeAnswer(Protocol):
    """What the step reads of a replica's answer (``gateway.proxy.forward.Answer``): its status
    and, when it is not a stream, its whole body."""

    @property
    def replica(self) -> Replica: ...
    @property
    def status(self) -> int: ...
    @property
    def body(self) -> bytes: ...
    @property
    def started_at(self) -> float: ...


OPT_IN_HEADER = "x-duet-validate-stream"
_YES = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True)
class Finding:
    """The step's word on one answer: the broken rule, and the standard replicas that can still
    answer within the budget left, best predicted first (empty: keep the answer, ``why``)."""

    reason: str
    replicas: tuple[Replica, ...]
    why: Handling


def escalation_headers(escalation: Escalation) -> list[tuple[bytes, bytes]]:
    """What the client is told: ``x-duet-escalated: <reason>`` when the standard answered
    instead; else ``x-duet-contract-violation: <reason>`` with ``x-duet-escalation-skipped:
    <why>`` (the fast answer went out unchanged)."""
    reason = escalation.reason.encode()
    if escalation.action is Handling.ESCALATED:
        return [(b"x-duet-escalated", reason)]
    return [(b"x-duet-contract-violation", reason), (b"x-duet-escalation-skipped", escalation.action.value.encode())]


def buffered_stream(exchange: Exchange) -> bool:
    """Whether a streamed request is sent upstream whole so its answer can be checked: a chat
    request whose client opted in, with a contract to check."""
    inbound = exchange.inbound
    return (type(inbound.body) is ChatBody and bool(inbound.body.stream)
            and inbound.headers.get(OPT_IN_HEADER, "").lower() in _YES and contract_of(inbound.body) is not None)


def inspect(exchange: Exchange, answer: WholeAnswer, now: float, plan_now: Callable[[], Plan]) -> Finding | None:
    """None when the answer needs no second look (not a whole chat, Responses or Messages answer
    of a fast variant, no contract, or the contract is kept); else what broke and where the request may go instead.
    ``now``: the director's clock, to spend the budget the request already used; ``plan_now``:
    the request planned again on the replicas as they are now (called only for a broken answer:
    the first plan's predictions predate the fast answer and the escalations since)."""
    attempt = exchange.attempt
    body = exchange.inbound.body
    if answer.status != 200 or attempt is None or attempt.variant.kind is VariantKind.FULL or not isinstance(body, ChatBody):
        return None
    if exchange.plan.profile.pinned_variant is not None:  # the client chose that variant (``duet parity`` does)
        return None
    if body.stream and not buffered_stream(exchange):
        return None
    contract = contract_of(body)
    reason = None if contract is None else violation(contract, answer.body)
    if reason is None:
        return None
    plan = plan_now()
    replicas = standard_within_budget(plan, (now - exchange.received_at) * 1e3)
    if replicas:
        return Finding(reason, replicas, Handling.ESCALATED)
    return Finding(reason, (), Handling.KEPT_NO_BUDGET if _standard_replicas(plan) else Handling.KEPT_NO_STANDARD)


def standard_within_budget(plan: Plan, elapsed_ms: float) -> tuple[Replica, ...]:
    """The routable full-precision replicas whose predicted latency (the router's, in ``plan``)
    fits what is left of the request's budget after ``elapsed_ms``, fastest predicted first. The
    client's first byte is the whole answer (a non-stream answer, or a stream held back to be
    checked), so the start target is held against the predicted end, as ``Budget.met_by`` judges
    an answer without a first token."""
    left = plan.profile.budget.after(elapsed_ms)
    fitting = []
    for replica in _standard_replicas(plan):
        prediction = plan.decision.predictions.get(replica.id)
        if prediction is not None and left.fits(replace(prediction, ttft_ms=prediction.e2e_ms)):
            fitting.append((prediction.e2e_ms, replica))
    return tuple(replica for _, replica in sorted(fitting, key=lambda pair: pair[0]))


def _standard_replicas(plan: Plan) -> list[Replica]:
    return [c.replica for c in plan.candidates if c.variant.kind is VariantKind.FULL and c.state.routable]


def escalated(reason: str, held: Attempt, set_aside: Outcome) -> Escalation:
    """The record of an escalation whose fast attempt ``held`` ended as ``set_aside``."""
    cost = held.variant.price.cost_usd(set_aside.input_tokens, set_aside.output_tokens)
    return Escalation(reason, Handling.ESCALATED, held.variant.name, cost)


def answered(attempt: Attempt, answer: WholeAnswer, now: float) -> Outcome:
    """The outcome of a fast attempt whose answer was set aside: it did answer (its replica's
    latency and tokens count as any answer's), the client just never saw it."""
    prompt, completion = usage_of(answer.body) or (0, 0)
    return Outcome(attempt.replica.id, True, answer.status, None, now - answer.started_at, prompt, completion)
