"""The director runs one request's life, after llm-d's request-control director: plan (classify and
route), admit (forward now, wait for a slot, or refuse), dispatch (try the ranked replicas until
one takes it), first token, finish. Bookkeeping hangs off its hooks (``gateway.flow.hooks``).

The HTTP gateway, the dry run, ``duet explain`` and ``duet replay`` all drive this one director:
what differs between them is only the transport (real replicas over HTTP, or the simulator's
engines in virtual time), the clock and the waiting room.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Protocol, TypeVar

from gateway.access.guard import OPEN, Grant
from gateway.config.active import ActiveConfig
from gateway.config.types import DuetConfig
from gateway.domain import Replica
from gateway.errors import DeadlineExceeded, NoHealthyReplica, RateLimited, RequestError, UpstreamFailed
from gateway.flow.admission import Action, AdmissionLimits, Ruling, assess, limits_for
from gateway.flow.escalation import WholeAnswer, answered, escalated, inspect
from gateway.flow.exchange import Attempt, Escalation, Exchange, Handling
from gateway.flow.hooks import ATTEMPT_ENDED, DISPATCHED, DONE, FIRST_TOKEN, REFUSED, Hooks
from gateway.flow.plan import Inbound, Plan, View, plan_request
from gateway.flow.refusal import refuse
from gateway.flow.waiting_room import Waiting, place_in_line
from gateway.outcome import AttemptFailure, Outcome
from gateway.routing.rollout import request_draw
from gateway.routing.timing import NO_TIMING
from gateway.sessions.seats import SeatLookup
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.prefix_index import PrefixIndex
from gateway.state.store import StateStore

log = logging.getLogger(__name__)

AnswerT = TypeVar("AnswerT")
AnswerT_co = TypeVar("AnswerT_co", covariant=True)
WholeT = TypeVar("WholeT", bound=WholeAnswer)


class Transport(Protocol[AnswerT_co]):
    """Sends one request to one replica: the answer once it started (a first event, or a whole
    non-stream body), or the failure that lets the next ranked replica try."""

    async def attempt(self, replica: Replica) -> AnswerT_co | AttemptFailure: ...


@dataclass(frozen=True, slots=True)
class Ledgers:
    """This gateway's per-replica ledgers that routing reads (the hooks write them). ``prefixes``:
    the prefix index (None: no prompt-cache awareness, and no prompt hashing); ``sessions``: where
    each conversation sits (None: no session keeps its variant)."""

    backlog: PrefillBacklog
    decodes: DecodeLedger
    prefixes: PrefixIndex | None = None
    sessions: SeatLookup | None = None


class Director:
    """``active``: the config to route with now (re-read at every plan, so a reload applies to the
    next request); ``clock``: seconds, for deadlines and ``received_at``. Each hook subscriber is
    timed for ``hooks.timer``, unless it is ``NO_TIMING`` (a replay's): then no clock is read."""

    def __init__(self, active: Callable[[], ActiveConfig], store: StateStore, ledgers: Ledgers, waiting: Waiting,
                 hooks: Hooks, clock: Callable[[], float]) -> None:
        self._active = active
        self._store = store
        self._ledgers = ledgers
        self._waiting = waiting
        self._hooks = hooks
        self._clock = clock
        self._limits: tuple[object, AdmissionLimits] | None = None
        self._arrivals = itertools.count()  # places in the waiting room's line

    @property
    def hooks(self) -> Hooks:
        return self._hooks

    def open(self, inbound: Inbound, request_id: str, *, grant: Grant = OPEN, received_at: float | None = None,
             explain: bool = False) -> Exchange:
        """A new request, planned. ``received_at``: when it arrived on the director's clock (default:
        now). Raises the client's error (unknown model, bad header)."""
        received_at = self._clock() if received_at is None else received_at
        active = self._active()
        try:
            plan = self._plan(inbound, grant, request_draw(request_id), active, explain)
        except RequestError as error:
            self.refused(None, error)
            raise
        return Exchange(inbound, request_id, received_at, plan, active.config, grant)

    def replan(self, exchange: Exchange) -> None:
        """Plan the request again on the replicas as they are now (and with the config as it is now)."""
        active = self._active()
        exchange.plan = self._plan(exchange.inbound, exchange.grant, request_draw(exchange.request_id), active)
        exchange.config = active.config
        exchange.claim = None

    def assess(self, exchange: Exchange) -> Ruling:
        """Admission control's ruling on the current plan. Raises the client's error when the
        plan ranks no replica."""
        plan = exchange.plan
        if not plan.decision.ranked:
            raise refuse(plan)
        states = {c.replica.id: c.state for c in plan.candidates}
        return assess(plan.profile, plan.decision, states, self._admission_limits(exchange.config))

    async def admit(self, exchange: Exchange) -> None:
        """Returns when the request may be dispatched, after waiting in the waiting room (and being
        planned again at each wake-up) while every replica is full. Raises the client's error when
        no replica can serve it, or RateLimited when it is shed or its deadline passes."""
        try:
            started = self._clock()
            wait_limit = exchange.plan.profile.budget.deadline_s(exchange.config.server.max_queue_wait_s)
            place: int | None = None  # kept each time the request steps back into the line
            while (ruling := self.assess(exchange)).action is not Action.FORWARD:
                if place is None:
                    place = place_in_line(exchange.plan.profile.priority.rank, next(self._arrivals))
                await self._wait(exchange, ruling, place, wait_limit - (self._clock() - started), wait_limit)
                self.replan(exchange)
        except RequestError as error:
            self.refused(exchange, error)
            raise

    async def dispatch(self, exchange: Exchange, transport: Transport[AnswerT]) -> AnswerT:
        """The first ranked replica's answer that started; a replica whose breaker refuses is
        skipped, one that fails is left for the next, up to ``server.max_attempts`` tries."""
        answer, failures, tried = await self._first_answer(exchange, exchange.plan.decision.ranked, transport)
        if answer is not None:
            exchange.failed_attempts = len(failures)
            return answer
        error = _exhausted(failures, tried, exchange.request_id)
        self.refused(exchange, error)
        raise error

    async def validate(self, exchange: Exchange, answer: WholeT, transport: Transport[WholeT]) -> WholeT:
        """Validate, then escalate (``gateway.flow.escalation``): ``answer``, or the standard
        variant's when a fast variant's whole answer broke the request's contract and the budget
        left fits a standard replica. The fast attempt ends only once a standard one answered,
        so a failed escalation still has it to send."""
        finding = inspect(exchange, answer, self._clock(), lambda: self._plan(
            exchange.inbound, exchange.grant, request_draw(exchange.request_id), self._active()))
        if finding is None:
            return answer
        held = exchange.attempt
        action = finding.why
        if finding.replicas:
            better, _, _ = await self._first_answer(exchange, finding.replicas, transport)
            if better is not None and held is not None:
                set_aside = answered(held, answer, self._clock())
                await self._end_attempt(exchange, held, set_aside)
                exchange.escalation = escalated(finding.reason, held, set_aside)
                return better
            exchange.attempt, action = held, Handling.KEPT_STANDARD_FAILED
        exchange.escalation = Escalation(finding.reason, action)
        return answer

    async def _first_answer(self, exchange: Exchange, replicas: Sequence[Replica],
                            transport: Transport[AnswerT]) -> tuple[AnswerT | None, list[AttemptFailure], int]:
        """``replicas`` tried in turn: the first answer (None when every one failed or was
        skipped), the failures, and how many were tried."""
        failures: list[AttemptFailure] = []
        tried = 0
        max_attempts = exchange.config.server.max_attempts
        for replica in replicas:
            if tried >= max_attempts:
                break
            if not (await self._store.begin(replica.id)).entered:
                continue
            tried += 1
            attempt = self._start_attempt(exchange, replica)
            try:
                answer = await transport.attempt(replica)
            except BaseException as exc:
                # Cancelled before the replica answered (the client left, or shutdown: 499, not the
                # replica's fault), or the transport broke: the attempt still ends in the ledgers.
                status = 499 if isinstance(exc, asyncio.CancelledError) else 500
                await self._end_attempt(exchange, attempt, Outcome(replica.id, False, status, None, 0.0, 0, 0))
                raise
            if isinstance(answer, AttemptFailure):
                failures.append(answer)
                await self._end_attempt(exchange, attempt, Outcome(replica.id, False, answer.status, None,
                                                                   answer.duration_s, 0, 0))
                continue
            return answer, failures, tried
        return None, failures, tried

    async def forward(self, exchange: Exchange, transport: Transport[AnswerT]) -> AnswerT:
        """An untracked request (/tokenize, /detokenize): the first of the model's replicas, ranked
        ones first, that answers. No admission, hooks or ledgers: it costs a replica no decode."""
        plan = exchange.plan
        ranked = plan.decision.ranked
        order = [*ranked, *(c.replica for c in plan.candidates if c.replica not in ranked)]
        failures: list[AttemptFailure] = []
        for replica in order[:exchange.config.server.max_attempts]:
            answer = await transport.attempt(replica)
            if not isinstance(answer, AttemptFailure):
                return answer
            failures.append(answer)
        raise _exhausted(failures, len(failures), exchange.request_id)

    def first_token(self, exchange: Exchange) -> None:
        """The replica serving the request prefilled its prompt."""
        attempt = exchange.attempt
        if attempt is not None:
            timer = self._hooks.timer
            timed = timer is not NO_TIMING
            for hook in self._hooks.first_token:
                started = perf_counter_ns() if timed else 0
                hook(exchange, attempt)
                if timed:
                    timer.observe(FIRST_TOKEN, hook, perf_counter_ns() - started)

    async def finish(self, exchange: Exchange, outcome: Outcome) -> None:
        """The request ended for the client with ``outcome`` (of its last attempt). A second call
        is a no-op, so callers may finish in a ``finally`` whatever ended the request."""
        attempt = exchange.attempt
        if exchange.outcome is not None or attempt is None:
            return
        exchange.outcome = outcome
        await self._end_attempt(exchange, attempt, outcome)
        timer = self._hooks.timer
        timed = timer is not NO_TIMING
        for hook in self._hooks.done:
            started = perf_counter_ns() if timed else 0
            if (pending := hook(exchange, outcome)) is not None:
                await pending
            if timed:
                timer.observe(DONE, hook, perf_counter_ns() - started)

    def refused(self, exchange: Exchange | None, error: RequestError) -> None:
        """The request ended without an answer from a replica."""
        timer = self._hooks.timer
        timed = timer is not NO_TIMING
        for hook in self._hooks.refused:
            started = perf_counter_ns() if timed else 0
            hook(exchange, error)
            if timed:
                timer.observe(REFUSED, hook, perf_counter_ns() - started)

    def _plan(self, inbound: Inbound, grant: Grant, draw: float, active: ActiveConfig, explain: bool = False) -> Plan:
        """``draw``: the request's number in [0, 1) that a canary's share is compared with."""
        snapshot = self._store.snapshot()
        if (prefixes := self._ledgers.prefixes) is not None:
            prefixes.watch(snapshot)  # a restarted replica's cache is gone before we route on it
        view = View(grant.visible(snapshot, active.config), self._ledgers.backlog.tokens,
                    self._ledgers.decodes.least_slack, self._store.lengths(), prefixes, self._ledgers.sessions,
                    grant.tasks)
        return plan_request(active, inbound, view, explain=explain, draw=draw, timer=self._hooks.timer)

    async def _wait(self, exchange: Exchange, ruling: Ruling, place: int, remaining_s: float, limit_s: float) -> None:
        """Wait in the waiting room for a slot (a wake, or the deadline), or raise why the request
        cannot wait."""
        profile = exchange.plan.profile
        if ruling.action is Action.SHED:
            raise RateLimited(f"Request shed ({ruling.reason}) for priority '{profile.priority.value}'.", retry_after_s=1.0)
        if remaining_s <= 0:
            raise RateLimited(f"No replica could start this request within its deadline ({limit_s:.1f} s); "
                              "retry later.", retry_after_s=max(1.0, limit_s))
        await self._waiting.wait(place, remaining_s)

    def _start_attempt(self, exchange: Exchange, replica: Replica) -> Attempt:
        plan = exchange.plan
        attempt = Attempt(replica, plan.target.model.variant_of(replica), plan.decision.predictions.get(replica.id))
        exchange.attempt = attempt
        exchange.attempts += 1
        if exchange.dispatched_at is None:
            exchange.dispatched_at = self._clock()
        timer = self._hooks.timer
        timed = timer is not NO_TIMING
        for hook in self._hooks.dispatched:
            started = perf_counter_ns() if timed else 0
            hook(exchange, attempt)
            if timed:
                timer.observe(DISPATCHED, hook, perf_counter_ns() - started)
        return attempt

    async def _end_attempt(self, exchange: Exchange, attempt: Attempt, outcome: Outcome) -> None:
        timer = self._hooks.timer
        timed = timer is not NO_TIMING
        for hook in self._hooks.attempt_ended:
            started = perf_counter_ns() if timed else 0
            if (pending := hook(exchange, attempt, outcome)) is not None:
                await pending
            if timed:
                timer.observe(ATTEMPT_ENDED, hook, perf_counter_ns() - started)

    def _admission_limits(self, config: DuetConfig) -> AdmissionLimits:
        """Slots per variant of ``config`` (rebuilt when the config changes)."""
        if self._limits is None or self._limits[0] is not config:
            variants = [v for model in config.models.values() for v in model.variants.values()]
            self._limits = (config, limits_for(variants))
        return self._limits[1]


def _exhausted(failures: list[AttemptFailure], tried: int, request_id: str) -> RequestError:
    """The client's error once every replica tried failed: a generic message with the request id.
    What each replica said (its id, address, status and body) goes to the log, never to the
    client."""
    if tried == 0:
        return NoHealthyReplica("No replica could take the request (all circuit breakers open).", retry_after_s=1.0)
    log.warning("request %s: every replica tried failed: %s", request_id,
                "; ".join(f"{f.replica_id}: {f.status} {f.detail}" for f in failures))
    see = f"(request id {request_id}; the gateway's log has the details)"
    if all(f.status == 429 for f in failures):
        return RateLimited(f"Every replica is overloaded {see}.", retry_after_s=1.0)
    if all(f.status == 504 for f in failures):
        return DeadlineExceeded(f"No replica answered in time {see}.")
    return UpstreamFailed(f"Every replica tried failed {see}.")
