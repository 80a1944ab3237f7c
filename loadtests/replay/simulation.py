"""The replay loop: arrivals and engine steps in one virtual clock, the gateway's routing and
state store in between, exactly as the gateway wires them (classify -> snapshot -> route ->
begin -> replica ... finish)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.config.types import DuetConfig
from gateway.decide import candidates_for, decode_claim
from gateway.domain import Outcome, Prediction, Replica, RequestProfile
from gateway.routing.predictors import StepModelPredictor
from gateway.routing.router import route
from gateway.state.decodes import DecodeLedger
from gateway.state.observations import with_prediction
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore, StoreSettings
from gateway.state.vllm_metrics import HistogramTotals, VllmStats
from loadtests.replay.sync import run_now
from loadtests.traces import Arrival
from serving.sim.engine import Engine
from serving.sim.events import Finished, SimRequest, TokensOut
from serving.sim.profile import Profile


@dataclass(frozen=True, slots=True)
class RequestResult:
    """One replayed request. ``status``: ``ok``, ``rejected`` (no replica took it) or ``failed``."""

    arrival_s: float
    task: str
    status: str
    variant: str | None
    input_tokens: int
    output_tokens: int
    ttft_s: float | None = None
    e2e_s: float | None = None
    predicted: Prediction | None = None
    ttft_budget_ms: float | None = None
    tpot_budget_ms: float | None = None
    latency_budget_ms: float | None = None
    cost_usd: float = 0.0
    # Duet's step-model prediction on the replica that served it (see Replay), for every policy.
    step_model: Prediction | None = None

    @property
    def tpot_s(self) -> float | None:
        """vLLM bench serve's TPOT: (latency - TTFT) / (output tokens - 1)."""
        if self.ttft_s is None or self.e2e_s is None or self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)

    @property
    def met_slo(self) -> bool:
        if self.status != "ok":
            return False
        if self.ttft_budget_ms is not None and (self.ttft_s or 0.0) * 1e3 > self.ttft_budget_ms:
            return False
        tpot = self.tpot_s
        if self.tpot_budget_ms is not None and tpot is not None and tpot * 1e3 > self.tpot_budget_ms:
            return False
        return not (self.latency_budget_ms is not None and (self.e2e_s or 0.0) * 1e3 > self.latency_budget_ms)


@dataclass(slots=True)
class _Pending:
    arrival: Arrival
    profile: RequestProfile
    replica: Replica
    prediction: Prediction | None
    step_model: Prediction
    decode_ticket: int
    prefilled: bool = False


class Replay:
    """One policy over one replica set. ``profiles``: variant name -> simulator profile."""

    def __init__(self, config: DuetConfig, profiles: Mapping[str, Profile], *, seed: int = 0,
                 scrape_interval_s: float = 1.0) -> None:
        (self._model,) = config.models.values()
        self._config = config
        self._now = 0.0
        self._store = InMemoryStateStore(StoreSettings(stale_after_s=max(5.0, 5 * scrape_interval_s)), clock=lambda: self._now)
        self._engines = {
            replica.id: Engine(profiles[replica.variant], seed=seed + i, token_events=False)
            for i, replica in enumerate(self._model.replicas)
        }
        self._backlog = PrefillBacklog()
        self._decodes = DecodeLedger()
        # Duet's step model predicts every request on the replica that served it, whatever the
        # policy: its error is then measured on each policy's traffic, not only on Duet's picks.
        self._step_model = StepModelPredictor()
        self._scrape_interval_s = scrape_interval_s
        self._pending: dict[str, _Pending] = {}
        self._results: list[RequestResult] = []

    def run(self, arrivals: Sequence[Arrival]) -> list[RequestResult]:
        next_scrape = 0.0
        index = 0
        while index < len(arrivals) or self._pending:
            next_arrival = arrivals[index].at_s if index < len(arrivals) else math.inf
            engine_id, next_step = self._next_engine_event()
            now = min(next_arrival, next_step, next_scrape)
            self._now = now
            if now == next_scrape:
                self._scrape(now)
                next_scrape = now + self._scrape_interval_s
            elif now == next_step and engine_id is not None:
                self._collect(self._engines[engine_id].advance(now))
            else:
                self._arrive(arrivals[index], f"r{index}")
                index += 1
        return sorted(self._results, key=lambda r: r.arrival_s)

    def _next_engine_event(self) -> tuple[str | None, float]:
        best_id, best = None, math.inf
        for replica_id, engine in self._engines.items():
            at = engine.next_event_time()
            if at is not None and at < best:
                best_id, best = replica_id, at
        return best_id, best

    def _scrape(self, now: float) -> None:
        for replica_id, engine in self._engines.items():
            self._collect(engine.advance(now))  # gauges as of now, not as of the engine's last event
            snap = engine.snapshot()
            stats = VllmStats(running=snap.running, waiting=snap.waiting, kv_cache_usage=snap.kv_cache_usage,
                              prompt_tokens_total=engine.counters.prompt_tokens,
                              generation_tokens_total=engine.counters.generation_tokens,
                              ttft=HistogramTotals(engine.counters.ttft_s_total, engine.counters.first_tokens))
            run_now(self._store.record_health(replica_id, True, now))
            run_now(self._store.record_stats(replica_id, stats, now))

    def _arrive(self, arrival: Arrival, request_id: str) -> None:
        defaults = self._config.policy.tasks[arrival.task]
        profile = RequestProfile(
            model=self._model.name, task=arrival.task, task_source="trace", input_tokens=arrival.input_tokens,
            max_output_tokens=arrival.output_tokens, expected_output_tokens=arrival.output_tokens,
            ttft_budget_ms=defaults.ttft_ms, latency_budget_ms=defaults.latency_ms, tpot_budget_ms=defaults.tpot_ms,
            priority=defaults.priority,
        )
        candidates = candidates_for(self._model, self._store.snapshot(), self._backlog.tokens, self._decodes.least_slack)
        decision = route(profile, candidates, self._config.policy.profile_for(profile.task))
        claim = decode_claim(self._model, profile, decision)
        for replica in decision.ranked[: self._config.server.max_attempts]:
            if not run_now(self._store.begin(replica.id)).admitted:
                continue
            engine = self._engines[replica.id]
            self._collect(engine.advance(self._now))  # bring its queue up to date before it admits
            request = SimRequest(request_id, arrival.input_tokens, arrival.output_tokens, min_tokens=arrival.output_tokens,
                                 ignore_eos=True, task=arrival.task)
            if engine.submit(request, self._now) is None:
                candidate = next(c for c in candidates if c.replica.id == replica.id)
                self._pending[request_id] = _Pending(arrival, profile, replica, decision.predictions.get(replica.id),
                                                     self._step_model.predict(profile, candidate),
                                                     self._decodes.claim(replica.id, claim))
                self._backlog.add(replica.id, arrival.input_tokens)
                return
            run_now(self._store.finish(Outcome(replica.id, False, 503, None, 0.0, 0, 0)))
        self._results.append(RequestResult(arrival.at_s, arrival.task, "rejected", None, arrival.input_tokens,
                                           arrival.output_tokens, ttft_budget_ms=profile.ttft_budget_ms,
                                           tpot_budget_ms=profile.tpot_budget_ms, latency_budget_ms=profile.latency_budget_ms))

    def _collect(self, events: Sequence[object]) -> None:
        now = self._now
        for event in events:
            if isinstance(event, Finished):
                self._now = event.time  # the store sees the outcome when it happened
                self._finish(event)
            elif isinstance(event, TokensOut) and event.first:
                pending = self._pending[event.request_id]
                pending.prefilled = True
                self._backlog.done(pending.replica.id, pending.arrival.input_tokens)
        self._now = now

    def _finish(self, event: Finished) -> None:
        pending = self._pending.pop(event.request_id)
        stalled_ms = self._decodes.done(pending.replica.id, pending.decode_ticket)
        if not pending.prefilled:
            self._backlog.done(pending.replica.id, pending.arrival.input_tokens)
        ok = event.reason != "abort"
        # The bias is learned on a step-model prediction: the policy's when it made one, else the shadow's.
        own = pending.prediction
        predicted = own if own is not None and own.model_ttft_ms is not None else pending.step_model
        outcome = with_prediction(
            Outcome(pending.replica.id, ok, 200 if ok else 502, event.ttft_s, event.e2e_s, event.prompt_tokens,
                    event.output_tokens),
            predicted, stalled_ms)
        run_now(self._store.finish(outcome))
        variant = self._model.variants[pending.replica.variant]
        profile = pending.profile
        self._results.append(RequestResult(
            pending.arrival.at_s, profile.task, "ok" if ok else "failed", variant.name,
            event.prompt_tokens, event.output_tokens, event.ttft_s, event.e2e_s, pending.prediction,
            profile.ttft_budget_ms, profile.tpot_budget_ms, profile.latency_budget_ms,
            variant.price.cost_usd(event.prompt_tokens, event.output_tokens), pending.step_model,
        ))
