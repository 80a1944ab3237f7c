"""The replay loop: arrivals and engine steps in one virtual clock, with the gateway's own director
(``gateway.flow``) between them. Each arrival is opened, admitted and dispatched exactly as the
HTTP gateway does it, with the routing hooks (prefill backlog, decode ledger, replica state and
its latency learner, the waiting room) and the gateway's demand keeper (what an autoscaled
fleet's gauge reads) subscribed; only the transport differs: a replica is a simulator engine
advanced in virtual time, not a server."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.autoscaling import DemandKeeper, InMemoryDemand
from gateway.fleet.replay.fleet import FixedFleet, FleetChange, FleetControl
from gateway.fleet.replay.request_result import RequestResult
from gateway.fleet.replay.split import PREFILL_LEG, Handoff, decode_leg, failed_leg, is_prefill_leg, prefill_leg
from gateway.fleet.replay.sync import run_now
from gateway.fleet.replay.waiting_room import Suspend, VirtualWaitingRoom
from gateway.fleet.workload.traces import Arrival
from gateway.fleet.world.detections import UnseenDetections, detecting_drawn, unnamed_prompt
from gateway.flow import (
    ActiveConfig,
    ApiKey,
    AttemptFailure,
    CompletionBody,
    DecodeLedger,
    Director,
    DuetConfig,
    Exchange,
    Grant,
    HistogramTotals,
    Inbound,
    InMemoryPrefixIndex,
    InMemoryStateStore,
    Ledgers,
    Outcome,
    Prediction,
    PrefillBacklog,
    Replica,
    RequestError,
    StoreSettings,
    VllmStats,
    routing_hooks,
)
from gateway.routing.registry import PLUGIN_TYPES
from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Finished, SimRequest, TokensOut
from serving.sim.profile import Profile


@dataclass(slots=True)
class _Accepted:
    """An engine queued the request (its answer arrives later, as engine events)."""

    replica: Replica


class _EngineTransport:
    """Sends one replayed request to a replica's simulator engine, or, to a decode replica the
    decision pairs (``prefill_for``), first to its prefill replica's (``replay.split``)."""

    def __init__(self, replay: Replay, request_id: str, arrival: Arrival, prefill_for: Mapping[str, Replica]) -> None:
        self._replay, self._request_id, self._arrival = replay, request_id, arrival
        self._prefill_for = prefill_for

    async def attempt(self, replica: Replica) -> _Accepted | AttemptFailure:
        replay, arrival = self._replay, self._arrival
        engine = replay.engines[replica.id]
        replay.collect(engine.advance(replay.now))  # bring its queue up to date before it admits
        # The engine generates the trace's length either way: the model stops there on its own.
        # A trace that records its prompts' blocks (Mooncake) gives the engine its prefix cache
        # (and preempted prompts a cached prefix to resume from); others share nothing.
        hashes = () if arrival.blocks is None else arrival.blocks.chained(engine.profile.engine.block_size,
                                                                           arrival.input_tokens)
        request = SimRequest(self._request_id, arrival.input_tokens, arrival.max_tokens or arrival.output_tokens,
                             natural_tokens=arrival.output_tokens, task=arrival.task, prefix_hashes=hashes)
        if (prefill := self._prefill_for.get(replica.id)) is not None:
            return replay.split(prefill, replica, request)
        if engine.submit(request, replay.now) is None:
            return _Accepted(replica)
        return AttemptFailure(replica.id, 503, "the engine refused the request", 0.0)


@dataclass(slots=True)
class _Pending:
    arrival: Arrival
    exchange: Exchange
    step_model: Prediction


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """How a replay runs, beside its config and fleet: ``seed``, the simulator's first seed;
    ``scrape_interval_s``, how often the gateway reads its replicas' metrics; and what the
    router knows of answer lengths. ``forced_length``: each request forces its trace's output
    length (min_tokens = max_tokens, ignore_eos), which the router then knows exactly: the
    oracle the replay ran with before issue #16, kept to measure what not knowing costs.
    Otherwise a request sends only its client's ``max_tokens`` ceiling and the router plans
    with the lengths it learned, read at ``length_quantile`` (the store's setting: the median
    unless given)."""

    seed: int = 0
    scrape_interval_s: float = 1.0
    forced_length: bool = False
    length_quantile: float | None = None
    # The share of requests that name no task (no x-duet-task): each of those is given a detection
    # the shipped detector made of an unseen prompt of its task (``detections``), which the
    # policy's task detector settings then read; 0: every request names its task, as before.
    unnamed_share: float = 0.0
    detections: UnseenDetections | None = None
    # The tasks whose application's API key names them (``ApiKey.tasks``): an unnamed request of
    # one of these comes on that key, as a team that keys each application would send it.
    keyed_tasks: frozenset[str] = frozenset()


class Replay:
    """One policy over one replica set. ``profiles``: variant name -> simulator profile;
    ``settings``: seed, scrape interval and what the router knows of lengths (default: as
    ``ReplaySettings()`` says).

    ``fleet``: whether and when replicas join or leave routing (default: the config's, fixed;
    ``gateway.fleet.replay.autoscale`` scales them on ``demand``, which the gateway's demand keeper
    fills from this replay's hooks). A replica joins with a config that lists it, swapped in as
    a reload swaps it; one withdrawn leaves the config at once and its engine runs until its
    requests have ended."""

    def __init__(self, config: DuetConfig, profiles: Mapping[str, Profile], settings: ReplaySettings | None = None, *,
                 fleet: FleetControl | None = None) -> None:
        settings = settings or ReplaySettings()
        config = detecting_drawn(config, settings.unnamed_share, settings.detections)
        (self._model,) = config.models.values()
        self._forced_length = settings.forced_length
        self._profiles = profiles
        self._fleet: FleetControl = fleet or FixedFleet()
        self._seeds = itertools.count(settings.seed)
        self._unnamed_share, self._detections = settings.unnamed_share, settings.detections
        self._open = Grant()  # an open gateway: no key
        self._keys = {task: Grant(ApiKey(f"app-{task}", task, "", "", 0.0, tasks=(task,))) for task in settings.keyed_tasks}
        self._names = random.Random(f"unnamed-{settings.seed}")  # its own stream: naming moves no other draw
        self._draining: set[str] = set()
        self.now = 0.0
        store = StoreSettings(stale_after_s=max(5.0, 5 * settings.scrape_interval_s))
        if settings.length_quantile is not None:
            store = dataclasses.replace(store, lengths=dataclasses.replace(store.lengths, quantile=settings.length_quantile))
        self._store = InMemoryStateStore(store, clock=lambda: self.now)
        self.engines = {replica.id: self._engine(replica) for replica in self._model.replicas}
        self._waiting_room = VirtualWaitingRoom()
        backlog, decodes = PrefillBacklog(), DecodeLedger()
        # The prefix index as the gateway keeps it (learned from its own dispatches), fed the
        # trace's blocks at its block size: the HTTP path hashes the prompt's text instead.
        self._block_tokens = config.policy.prefix_cache.block_tokens
        self._prefixes = prefixes = InMemoryPrefixIndex(config.policy.prefix_cache.blocks_per_replica)
        self._active = ActiveConfig.of(config)
        hooks = routing_hooks(backlog, decodes, self._store, self._waiting_room, prefixes)
        # Counted as the gateway counts it (only for an autoscaled model; only its fleet reads it).
        self.demand = InMemoryDemand(lambda: self.now)
        DemandKeeper(self.demand).subscribe(hooks)
        self._director = Director(lambda: self._active, self._store, Ledgers(backlog, decodes, prefixes), self._waiting_room,
                                  hooks, lambda: self.now)
        # Duet's step model predicts every request on the replica that served it, whatever the
        # policy: its error is then measured on each policy's traffic, not only on Duet's picks.
        self._step_model = PLUGIN_TYPES["step-model"].cls()
        self._scrape_interval_s = settings.scrape_interval_s
        self._pending: dict[str, _Pending] = {}
        self._results: list[RequestResult] = []
        self._handoffs: dict[str, Handoff] = {}  # by prefill leg id
        self._prefill_legs_s: dict[str, float] = {}  # a split request's prefill leg, by request id

    def run(self, arrivals: Sequence[Arrival]) -> list[RequestResult]:
        next_scrape = 0.0
        index = 0
        while index < len(arrivals) or self._pending or self._waiting_room:
            self._resume_woken()
            next_arrival = arrivals[index].at_s if index < len(arrivals) else math.inf
            engine_id, next_step = self._next_engine_event()
            next_timeout = self._waiting_room.next_timeout_s()
            next_change = self._fleet.next_change_s()
            now = min(next_arrival, next_step, next_scrape, next_timeout, next_change)
            self.now = now
            if now == next_scrape:
                self._scrape(now)
                next_scrape = now + self._scrape_interval_s
            elif now == next_step and engine_id is not None:
                self.collect(self.engines[engine_id].advance(now))
            elif now == next_timeout:
                self._resume_timed_out(now)
            elif now == next_change:
                self._change(self._fleet.change(now, self.demand))
            else:
                self._arrive(arrivals[index], f"r{index}")
                index += 1
        return sorted(self._results, key=lambda r: r.arrival_s)

    def _next_engine_event(self) -> tuple[str | None, float]:
        best_id, best = None, math.inf
        for replica_id, engine in self.engines.items():
            at = engine.next_event_time()
            if at is not None and at < best:
                best_id, best = replica_id, at
        return best_id, best

    def _scrape(self, now: float) -> None:
        """The monitor's round: health and metrics of the replicas the config lists (never one
        still loading, which has no engine yet, nor one withdrawn, which the monitor forgot)."""
        for replica in self._routable():
            self._check(replica.id, now)

    def _check(self, replica_id: str, now: float) -> None:
        engine = self.engines[replica_id]
        self.collect(engine.advance(now))  # gauges as of now, not as of the engine's last event
        snap = engine.snapshot()
        counters = engine.counters
        stats = VllmStats(running=snap.running, waiting=snap.waiting, kv_cache_usage=snap.kv_cache_usage,
                          prompt_tokens_total=counters.prompt_tokens, generation_tokens_total=counters.generation_tokens,
                          prefix_cache_queries_total=counters.prefix_cache_queries,
                          prefix_cache_hits_total=counters.prefix_cache_hits,
                          ttft=HistogramTotals(counters.ttft_s_total, counters.first_tokens))
        run_now(self._store.record_health(replica_id, True, now))
        run_now(self._store.record_stats(replica_id, stats, now))

    def _routable(self) -> tuple[Replica, ...]:
        return self._active.config.models[self._model.name].replicas

    def _engine(self, replica: Replica) -> Engine:
        """The replica's engine: its variant's profile, launched with the replica's own role
        and scheduler limits where its config sets them."""
        engine = replica.engine
        profile = self._profiles[replica.variant].with_engine(engine.role.value, engine.max_num_batched_tokens,
                                                              engine.max_num_seqs)
        return Engine(profile, seed=next(self._seeds), token_events=False)

    def split(self, prefill: Replica, decode: Replica, request: SimRequest) -> _Accepted | AttemptFailure:
        """Starts ``request``'s prefill leg on ``prefill``; its decode leg starts when the KV is ready."""
        engine = self.engines[prefill.id]
        self.collect(engine.advance(self.now))
        if (refusal := engine.submit(prefill_leg(request), self.now)) is not None:
            return AttemptFailure(decode.id, 503, f"prefill engine of {prefill.id} refused: {refusal}", 0.0)
        self._handoffs[request.request_id + PREFILL_LEG] = Handoff(decode, request, self.now)
        return _Accepted(decode)

    def _hand_over(self, event: Finished) -> None:
        """A prefill leg ended: its KV goes to the decode engine, or the request fails."""
        handoff = self._handoffs.pop(event.request_id)
        engine = self.engines.get(handoff.decode.id)
        if not event.kv_ready or engine is None:
            self._finish(failed_leg(handoff, event.time))
            return
        self.collect(engine.advance(event.time))
        if engine.submit(decode_leg(handoff.request), event.time) is not None:
            self._finish(failed_leg(handoff, event.time))
            return
        self._prefill_legs_s[handoff.request.request_id] = event.time - handoff.started_s

    def _change(self, change: FleetChange) -> None:
        """Replicas join or leave routing: a config listing the replicas now routable is swapped
        in (as a reload does); a joining replica gets its first check at once (as the monitor
        does for a new replica) and the waiting room's line re-plans; a withdrawn one is forgotten
        by the store (as the monitor forgets a replica that left the config) and leaves once
        its requests have ended."""
        if not change.joined and not change.withdrawn:
            return
        gone = set(change.withdrawn)
        replicas = (*(r for r in self._routable() if r.id not in gone), *change.joined)
        config = self._active.config
        model = dataclasses.replace(config.models[self._model.name], replicas=replicas)
        self._active = ActiveConfig(dataclasses.replace(config, models={**config.models, model.name: model}),
                                    self._active.counters)
        for replica in change.joined:
            self.engines[replica.id] = self._engine(replica)
            self._check(replica.id, self.now)
        if change.joined:  # every request waiting in line re-plans once, best first
            for waiter in self._waiting_room.take_all():
                self._step(waiter, True)
        for replica_id in change.withdrawn:
            run_now(self._store.forget(replica_id))
            self._draining.add(replica_id)
            self._leave_if_drained(replica_id, self.now)

    def _leave_if_drained(self, replica_id: str, at: float) -> None:
        """A withdrawn replica with no request left leaves: its engine stops, the prefix index
        forgets it (a draining replica's first tokens still taught it blocks)."""
        if self.engines[replica_id].in_flight() or any(
                p.exchange.attempt is not None and p.exchange.attempt.replica.id == replica_id
                for p in self._pending.values()):
            return
        self._draining.discard(replica_id)
        del self.engines[replica_id]
        self._prefixes.forget(replica_id)
        self._fleet.drained(replica_id, at)

    def _arrive(self, arrival: Arrival, request_id: str) -> None:
        """The request as a client would send it: the task named in ``x-duet-task`` (or, for the
        ``unnamed_share``, no task and a detection drawn for it, on its application's key for a
        ``keyed_tasks`` task), its client's max_tokens (or, with
        ``forced_length``, the trace's length forced), the prompt's length known."""
        fields: dict[str, Any] = {"model": self._model.name, "prompt": ""}
        headers, grant = {"x-duet-task": arrival.task}, self._open
        if self._unnamed_share and self._detections is not None and self._detections.knows(arrival.task):
            named, source_draw, prompt_draw = (self._names.random() for _ in range(3))
            if named < self._unnamed_share:
                fields["prompt"], headers = unnamed_prompt(arrival.task, source_draw, prompt_draw), {}
                grant = self._keys.get(arrival.task, self._open)
        if self._forced_length:
            fields.update(max_tokens=arrival.output_tokens, min_tokens=arrival.output_tokens, ignore_eos=True)
        elif arrival.max_tokens is not None:
            fields.update(max_tokens=arrival.max_tokens)
        body = CompletionBody.model_validate(fields)
        blocks = () if arrival.blocks is None else arrival.blocks.chained(self._block_tokens, arrival.input_tokens)
        inbound = Inbound(body, headers, prompt_tokens=arrival.input_tokens, prefix_blocks=blocks, splits=True)
        exchange = self._director.open(inbound, request_id, grant=grant)
        self._step(self._serve(exchange, arrival), None)

    async def _serve(self, exchange: Exchange, arrival: Arrival) -> None:
        director = self._director
        try:
            await director.admit(exchange)
            transport = _EngineTransport(self, exchange.request_id, arrival, exchange.plan.decision.prefill_for)
            accepted = await director.dispatch(exchange, transport)
        except RequestError as error:
            budget = exchange.plan.profile.budget
            self._results.append(RequestResult(arrival.at_s, arrival.task, "rejected", None, arrival.input_tokens,
                                               arrival.output_tokens, budget=budget, refusal_status=error.status))
            return
        candidate = exchange.plan.candidate(accepted.replica.id)
        assert candidate is not None
        # Told the true length, so that its error is the latency model's, not the length estimate's.
        profile = dataclasses.replace(exchange.plan.profile, expected_output_tokens=arrival.output_tokens)
        self._pending[exchange.request_id] = _Pending(arrival, exchange, self._step_model.predict(profile, candidate))

    def _step(self, coroutine: Coroutine[Any, Any, None], value: bool | None) -> None:
        """Runs a request's coroutine until it ends or waits in the virtual waiting room."""
        try:
            suspend = coroutine.send(value)
        except StopIteration:
            return
        assert isinstance(suspend, Suspend)
        self._waiting_room.park(coroutine, suspend, self.now)

    def _resume_woken(self) -> None:
        """Requests finished since the last look: as many waiters as were woken re-try, best first."""
        while (waiter := self._waiting_room.pop_woken()) is not None:
            self._step(waiter, True)

    def _resume_timed_out(self, now: float) -> None:
        for waiter in self._waiting_room.take_timed_out(now):
            self._step(waiter, False)

    def collect(self, events: Sequence[object]) -> None:
        now = self.now
        for event in events:
            if isinstance(event, Finished) and is_prefill_leg(event.request_id):
                self.now = event.time
                self._hand_over(event)
            elif is_prefill_leg(getattr(event, "request_id", "")):
                continue  # the prefill leg's one token never reaches the client
            elif isinstance(event, Finished):
                self.now = event.time  # the store sees the outcome when it happened
                self._finish(event)
            elif isinstance(event, TokensOut) and event.first:
                self._director.first_token(self._pending[event.request_id].exchange)
        self.now = now

    def _finish(self, event: Finished) -> None:
        pending = self._pending.pop(event.request_id)
        exchange = pending.exchange
        ok = event.reason not in ("abort", "error")
        attempt = exchange.attempt
        assert attempt is not None
        outcome = Outcome(attempt.replica.id, ok, 200 if ok else 502, event.ttft_s, event.e2e_s, event.prompt_tokens,
                          event.output_tokens)
        run_now(self._director.finish(exchange, outcome))
        variant = attempt.variant
        # The client's times count from arrival: a request that waited for a slot waited that long.
        waited_s = (exchange.dispatched_at or exchange.received_at) - exchange.received_at
        before_s = waited_s + self._prefill_legs_s.pop(event.request_id, 0.0)  # a split request's prefill leg
        ttft_s = None if event.ttft_s is None else before_s + event.ttft_s
        self._results.append(RequestResult(
            pending.arrival.at_s, exchange.plan.profile.task, "ok" if ok else "failed", variant.name,
            event.prompt_tokens, event.output_tokens, ttft_s, before_s + event.e2e_s, attempt.prediction,
            exchange.plan.profile.budget, variant.price.cost_usd(event.prompt_tokens, event.output_tokens),
            pending.step_model, exchange.route, expected_output_tokens=exchange.plan.profile.expected_output_tokens,
            cached_tokens=event.cached_tokens, replica=attempt.replica.id, waited_s=waited_s,
        ))
        if attempt.replica.id in self._draining:
            self._leave_if_drained(attempt.replica.id, event.time)
