"""What the gateway keeps about each request, as subscribers to the lifecycle's hooks: the prefill
backlog, the decode ledger, replica state and its latency learner, the waiting room's wake-up,
quota settlement and telemetry. The HTTP gateway subscribes all of them; a replay subscribes the
ones that shape routing (``routing_hooks``)."""

from __future__ import annotations

import logging
from typing import Any

from gateway.access.guard import Access
from gateway.access.receipts.receipt import receipt_for, standard_of
from gateway.errors import RequestError
from gateway.flow.exchange import Attempt, Escalation, Exchange
from gateway.flow.hooks import Hooks
from gateway.flow.plan import decode_claim
from gateway.flow.waiting_room import Waiting
from gateway.outcome import Outcome
from gateway.sessions.seats import SeatLookup
from gateway.state.decodes import DecodeLedger
from gateway.state.observations import with_prediction
from gateway.state.prefill import PrefillBacklog
from gateway.state.prefix_index import PrefixIndex
from gateway.state.store import StateStore
from gateway.telemetry import Telemetry

access_log = logging.getLogger("duet.access")


class BacklogKeeper:
    """The request's prompt counts in the prefill backlog of the replica that computes it (its
    replica, or the prefill replica a split pairs with it) until it is prefilled."""

    def __init__(self, backlog: PrefillBacklog) -> None:
        self._backlog = backlog

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        self._backlog.add(_prefiller(exchange, attempt), exchange.plan.profile.input_tokens)

    def first_token(self, exchange: Exchange, attempt: Attempt) -> None:
        if not attempt.prefilled:
            attempt.prefilled = True
            self._backlog.done(_prefiller(exchange, attempt), exchange.plan.profile.input_tokens)

    def attempt_ended(self, exchange: Exchange, attempt: Attempt, outcome: Outcome) -> None:
        self.first_token(exchange, attempt)  # prefilled or failed: either way it left the queue


def _prefiller(exchange: Exchange, attempt: Attempt) -> str:
    """The id of the replica that computes the attempt's prompt."""
    prefill = exchange.plan.decision.prefill_for.get(attempt.replica.id)
    return attempt.replica.id if prefill is None else prefill.id


class DecodeKeeper:
    """The request joins its replica's decode ledger (charging its prefill to the requests already
    there) and leaves it with the stall later prompts charged to it."""

    def __init__(self, decodes: DecodeLedger) -> None:
        self._decodes = decodes

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        if exchange.claim is None:
            exchange.claim = decode_claim(exchange.plan)
        attempt.decode_ticket = self._decodes.claim(attempt.replica.id, exchange.claim)

    def attempt_ended(self, exchange: Exchange, attempt: Attempt, outcome: Outcome) -> None:
        if attempt.decode_ticket is not None:
            attempt.stalled_ms = self._decodes.done(attempt.replica.id, attempt.decode_ticket)
            attempt.decode_ticket = None


class PrefixKeeper:
    """A request whose prompt a replica prefilled leaves its blocks in that replica's cache (vLLM
    caches a prompt's full blocks as it computes them). Learnt at the first token, not at
    dispatch: off the path to the replica, and a replica that failed holds nothing new."""

    def __init__(self, prefixes: PrefixIndex) -> None:
        self._prefixes = prefixes

    def first_token(self, exchange: Exchange, attempt: Attempt) -> None:
        self._prefixes.learn(attempt.replica.id, exchange.plan.prefix_blocks)


class SessionKeeper:
    """A session sits where its request was sent."""

    def __init__(self, sessions: SeatLookup) -> None:
        self._sessions = sessions

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        if (session := exchange.plan.session) is not None:
            self._sessions.sit(session.key, attempt.replica.variant, attempt.replica.id)


class StateKeeper:
    """Every attempt's outcome goes to the replica-state store (EWMA latencies, errors, breaker),
    carrying the latency model's own prediction plus the stall other prompts added after it was
    made, which is what the store learns the model's bias on (``with_prediction``)."""

    def __init__(self, store: StateStore) -> None:
        self._store = store

    async def attempt_ended(self, exchange: Exchange, attempt: Attempt, outcome: Outcome) -> None:
        await self._store.finish(with_prediction(outcome, attempt.prediction, attempt.stalled_ms))


class LengthKeeper:
    """Every answer that ended well teaches the store how long its task's answers run (an answer
    cut at max_tokens counts at that length: within that ceiling it is what the client got)."""

    def __init__(self, store: StateStore) -> None:
        self._store = store

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        if outcome.ok and outcome.output_tokens > 0:
            profile = exchange.plan.profile
            self._store.record_output(profile.model, profile.task, outcome.output_tokens)


class WakeKeeper:
    """A finished request may have freed a slot: the best waiter re-checks."""

    def __init__(self, waiting: Waiting) -> None:
        self._waiting = waiting

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        self._waiting.wake()


class ReceiptKeeper:
    """The request's savings receipt, once: its GPU time on the variant that served it and on
    the model's standard variant, from the tokens it was charged (none when it failed)."""

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        assert exchange.attempt is not None
        served = outcome.status < 400
        tokens_in, tokens_out = (outcome.input_tokens, outcome.output_tokens) if served else (0, 0)
        standard = standard_of(exchange.plan.target.model.variants.values())
        exchange.receipt = receipt_for(exchange.attempt.variant, standard, exchange.plan.profile.task, tokens_in, tokens_out)


class QuotaKeeper:
    """The key is charged the request's actual tokens and cost, and its receipt."""

    def __init__(self, access: Access) -> None:
        self._access = access

    async def done(self, exchange: Exchange, outcome: Outcome) -> None:
        assert exchange.attempt is not None
        variant = exchange.attempt.variant
        profile = exchange.plan.profile
        await self._access.settle(exchange.grant, profile.model, variant, profile.task, outcome, exchange.receipt)


class TelemetryKeeper:
    """Metrics for every request, and its access-log line (no prompt text)."""

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = telemetry

    def refused(self, exchange: Exchange | None, error: RequestError) -> None:
        if exchange is not None:
            profile = exchange.plan.profile
            self._telemetry.requests_by(profile.model, "none", profile.task, str(error.status)).inc()
            self._telemetry.task_sources_by(profile.model, profile.task, task_source_kind(profile.task_source)).inc()
            if (overhead_s := exchange.overhead_s) is not None:  # it was dispatched, and every attempt failed
                self._telemetry.overhead.observe(overhead_s)

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        assert exchange.attempt is not None
        telemetry, profile = self._telemetry, exchange.plan.profile
        model, variant = profile.model, exchange.attempt.variant
        if (overhead_s := exchange.overhead_s) is not None:
            telemetry.overhead.observe(overhead_s)
        telemetry.requests_by(model, variant.name, profile.task, str(outcome.status)).inc()
        telemetry.task_sources_by(model, profile.task, task_source_kind(profile.task_source)).inc()
        telemetry.decisions_by(model, variant.name, exchange.plan.decision.reason).inc()
        telemetry.e2e_by(model, variant.name).observe(outcome.duration_s)
        if exchange.failed_attempts:
            telemetry.fallbacks_by(model).inc()
        if outcome.ttft_s is not None:
            telemetry.ttft_by(model, variant.name).observe(outcome.ttft_s)
        if outcome.status in (502, 504) and outcome.ttft_s is not None:
            telemetry.stream_errors_by(model, variant.name).inc()
        telemetry.receipt(model, variant.name, exchange.receipt)
        if outcome.status < 400:
            telemetry.cost_by(model, variant.name).inc(variant.price.cost_usd(outcome.input_tokens, outcome.output_tokens))
            telemetry.tokens_by(model, variant.name, "input").inc(outcome.input_tokens)
            telemetry.tokens_by(model, variant.name, "output").inc(outcome.output_tokens)
            met = profile.budget.met_by(outcome.ttft_s, outcome.duration_s, outcome.output_tokens)
            telemetry.slo_by(profile.task, "met" if met else "missed").inc()
        if (escalation := exchange.escalation) is not None:
            count_escalation(telemetry, exchange, escalation)
        if access_log.isEnabledFor(logging.INFO):
            access_log.info("request", extra={"fields": access_fields(exchange, outcome)})


def count_escalation(telemetry: Telemetry, exchange: Exchange, escalation: Escalation) -> None:
    """The escalation by task and reason, and the set-aside fast answer's cost (it was paid for)."""
    model = exchange.plan.profile.model
    telemetry.escalations.labels(model, exchange.plan.profile.task, escalation.reason, escalation.action.value).inc()
    if escalation.set_aside_variant is not None:
        telemetry.cost_by(model, escalation.set_aside_variant).inc(escalation.set_aside_cost_usd)


def task_source_kind(source: str) -> str:
    """header, rule, detector, abstained or default (a rule's name dropped: bounded labels)."""
    return source.split(":", 1)[0]


def access_fields(exchange: Exchange, outcome: Outcome) -> dict[str, Any]:
    profile = exchange.plan.profile
    return {
        "request_id": exchange.request_id, "model": profile.model,
        "variant": None if exchange.attempt is None else exchange.attempt.variant.name,
        "replica": outcome.replica_id, "task": profile.task, "task_source": profile.task_source,
        "task_confidence": profile.task_confidence, "route": exchange.plan.decision.reason,
        "status": outcome.status, "ttft_ms": None if outcome.ttft_s is None else round(outcome.ttft_s * 1e3, 2),
        "duration_ms": round(outcome.duration_s * 1e3, 2),
        "input_tokens": outcome.input_tokens, "output_tokens": outcome.output_tokens,
        **exchange.receipt.to_json(),
    }


def routing_hooks(backlog: PrefillBacklog, decodes: DecodeLedger, store: StateStore, waiting: Waiting,
                  prefixes: PrefixIndex | None = None, sessions: SeatLookup | None = None) -> Hooks:
    """The subscribers whose bookkeeping routing reads: a replay needs exactly these (and
    ``prefixes``, the prefix index, and ``sessions`` when it routes with them)."""
    backlog_keeper, decode_keeper = BacklogKeeper(backlog), DecodeKeeper(decodes)
    seats = [] if sessions is None else [SessionKeeper(sessions).dispatched]
    learners = [] if prefixes is None else [PrefixKeeper(prefixes).first_token]
    return Hooks(
        dispatched=[backlog_keeper.dispatched, decode_keeper.dispatched, *seats],
        first_token=[backlog_keeper.first_token, *learners],
        # The ledger's stall first: the state keeper's latency learner reads it.
        attempt_ended=[backlog_keeper.attempt_ended, decode_keeper.attempt_ended, StateKeeper(store).attempt_ended],
        done=[WakeKeeper(waiting).done, LengthKeeper(store).done],
    )


def gateway_hooks(routing: Hooks, access: Access, telemetry: Telemetry) -> Hooks:
    """``routing``'s subscribers, then quota settlement and telemetry, as the HTTP gateway runs,
    every extension point timed into the telemetry (``duet_extension_point_duration_seconds``)."""
    telemetry_keeper = TelemetryKeeper(telemetry)
    return Hooks(
        dispatched=list(routing.dispatched),
        first_token=list(routing.first_token),
        attempt_ended=list(routing.attempt_ended),
        done=[*routing.done, ReceiptKeeper().done, QuotaKeeper(access).done, telemetry_keeper.done],
        refused=[*routing.refused, telemetry_keeper.refused],
        timer=telemetry.extension_times,
    )
