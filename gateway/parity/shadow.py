"""Shadow checks: a share of the requests a candidate variant serves, per (variant, task), is
run again on the standard as ``sheddable`` work, only when the standard has slack, and the pair
(the standard's answer, and the candidate's answer AS ITS CLIENT RECEIVED IT) is scored by the
task's verifier (gateway.parity.ports.PairJudge).

The draw is made when the request is dispatched (``gateway.parity.sample``, a ``dispatched``
subscriber here): a drawn attempt gets a tap (``gateway.parity.tap``) that keeps the answer
as the HTTP layer sends it, a whole body or a stream's events, and nothing else does; the draw is
all that a request that is not sampled pays (``make bench-router`` measures it). At ``done`` a
drawn request that ended well (a 200, not cut off, within the tap's limit) becomes a check: a
task of its own, through a director of its own that shares the live one's ledgers, so the
shadow request counts in the prefill backlog and the decode ledger like any other, and it is
sent only when the decode ledger says the live requests on the chosen replica can absorb its
prefill. A request that failed, was cut off or whose client left is not scored.

The shadow side gets the client's body, not streamed, with ``temperature`` and ``seed`` as the
client sent them; a request with neither temperature 0 nor a seed gets a seed from its id for
the shadow run, and its record says the pair was sampled (``deterministic`` False). A
``shadow``-stage variant has no live traffic: the standard's requests are mirrored to it instead
(the standard's live answer is kept, the candidate is the shadow side).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.config.online_parity import OnlineParitySettings
from gateway.config.types import DuetConfig, ModelSpec
from gateway.domain import RolloutStage, Variant
from gateway.endpoints import ChatBody
from gateway.errors import RequestError
from gateway.flow.admission import Action
from gateway.flow.director import Director, Ledgers
from gateway.flow.exchange import Attempt, Exchange
from gateway.flow.plan import Inbound, decode_claim
from gateway.flow.upstream import upstream_request
from gateway.outcome import Outcome
from gateway.parity.metrics import ParityMetrics
from gateway.parity.ports import PairJudge, PairScore
from gateway.parity.sample import Sample, shadow_sample
from gateway.parity.sequential import Conclusion
from gateway.parity.tap import AnswerTap
from gateway.parity.verdicts import OnlineVerdicts, PairRecord, design_for
from gateway.proxy.forward import Answer, UpstreamCall, UpstreamRequest
from gateway.proxy.relay import finish_body
from gateway.proxy.sse import ModelRewrite
from gateway.routing.rollout import request_draw

log = logging.getLogger(__name__)

RECHECK_S = 0.05  # how often a check waiting for slack looks again
CHAT_PATH = "/v1/chat/completions"

Transporter = Callable[[UpstreamRequest], UpstreamCall]
OnConclusion = Callable[[str, str, Conclusion], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Live:
    """The side its client received: what it was sent through (the tap) and how long it took."""

    tap: AnswerTap
    duration_ms: float


@dataclass(frozen=True, slots=True)
class Job:
    """A drawn request: its body (as a dict), task, the model, the pair, and its live answer."""

    request_id: str
    body: dict[str, Any]
    task: str
    model: ModelSpec
    sample: Sample
    settings: OnlineParitySettings
    live: Live

    @property
    def candidate(self) -> Variant:
        return self.sample.candidate


@dataclass(frozen=True, slots=True)
class ShadowParts:
    """``director``: a director of the shadow checks' own (routing hooks only, the live ledgers);
    ``transport``: the runtime's upstream; ``on_conclusion``: what a verdict does (revoke, open)."""

    director: Director
    ledgers: Ledgers
    transport: Transporter
    judge: PairJudge
    metrics: ParityMetrics
    on_conclusion: OnConclusion
    # The config running now (not the job's snapshot): whether the task is allowed at the pair.
    config: Callable[[], DuetConfig]


class ShadowChecks:
    """The ``dispatched`` subscriber that draws (and taps a drawn answer), the ``done`` one that
    turns a drawn request into a check, and the checks (at most ``max_in_flight`` at a time; a
    draw beyond that is dropped and counted)."""

    def __init__(self, parts: ShadowParts, verdicts: OnlineVerdicts, on_pair: Callable[[], None] = lambda: None) -> None:
        self._parts = parts
        self._verdicts = verdicts
        self._on_pair = on_pair  # after each pair is added (the status file)
        self._running: set[asyncio.Task[None]] = set()

    @property
    def verdicts(self) -> OnlineVerdicts:
        return self._verdicts

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        """Draw the attempt; a drawn one keeps its answer as it is sent (when a check can start)."""
        if (sample := shadow_sample(exchange, attempt)) is None:
            return
        if len(self._running) >= exchange.config.online_parity.max_in_flight:
            self._parts.metrics.checks.labels(sample.candidate.key, exchange.plan.profile.task, "busy").inc()
            return
        attempt.tap = AnswerTap(sample)

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        """A drawn request that ended well becomes a check of its answer."""
        tap = None if exchange.attempt is None else exchange.attempt.tap
        if not isinstance(tap, AnswerTap):  # not drawn (the attempt's sink is online parity's own tap)
            return
        settings, task, key = exchange.config.online_parity, exchange.plan.profile.task, tap.sample.candidate.key
        if not outcome.ok or outcome.status != 200:  # failed, cut off, or the client left
            self._parts.metrics.checks.labels(key, task, "not_scored").inc()
            return
        if len(self._running) >= settings.max_in_flight:
            self._parts.metrics.checks.labels(key, task, "busy").inc()
            return
        job = Job(exchange.request_id, exchange.inbound.body.model_dump(exclude_none=True), task,
                  exchange.plan.target.model, tap.sample, settings, Live(tap, outcome.duration_s * 1e3))
        check = asyncio.get_running_loop().create_task(self.check(job))
        self._running.add(check)
        check.add_done_callback(self._running.discard)

    async def drain(self) -> None:
        """Wait for the checks under way (tests, and shutdown)."""
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def stop(self) -> None:
        for check in list(self._running):
            check.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)

    async def check(self, job: Job) -> None:
        """Run the shadow side of ``job`` when there is slack, score it with the live answer and
        add the pair to the verdicts."""
        metrics, key = self._parts.metrics, job.candidate.key
        started = time.perf_counter()
        try:
            live = job.live.tap.completion()
        except ValueError as exc:  # no whole chat completion reached the client: nothing to score
            metrics.checks.labels(key, job.task, "not_scored").inc()
            log.info("shadow check of %s on %s not scored: %s", job.request_id, key, exc)
            return
        try:
            data, deterministic = shadow_body(job)
            shadow = await self._run(job, job.sample.shadow_side, data)
            if shadow is None:
                metrics.checks.labels(key, job.task, "no_slack").inc()
                return
            received = (live, job.live.duration_ms)
            standard, candidate = (shadow, received) if job.sample.live_is_candidate else (received, shadow)
            score = await asyncio.to_thread(self._parts.judge, job.task, data, standard[0], candidate[0])
        except (RequestError, ValueError) as exc:  # the shadow side refused or answered something unreadable
            metrics.checks.labels(key, job.task, "failed").inc()
            log.info("shadow check of %s on %s failed: %s", job.request_id, key, exc)
            return
        metrics.check_seconds.observe(time.perf_counter() - started)
        metrics.checks.labels(key, job.task, "paired").inc()
        await self._score(job, data, deterministic, (standard, candidate, score))

    async def _score(self, job: Job, data: dict[str, Any], deterministic: bool,
                     sides: tuple[tuple[dict[str, Any], float], tuple[dict[str, Any], float], PairScore]) -> None:
        (standard, standard_ms), (candidate, candidate_ms), score = sides
        texts = {"request": _text(data), "standard": _text(standard), "candidate": _text(candidate)}
        record = PairRecord(
            at=time.time(), variant=job.candidate.key, task=job.task, request_sha256=_sha(texts["request"]),
            standard_sha256=_sha(texts["standard"]), candidate_sha256=_sha(texts["candidate"]),
            standard_score=score.standard, candidate_score=score.candidate, measure=score.measure,
            detail=score.detail, deterministic=deterministic, standard_ms=standard_ms, candidate_ms=candidate_ms,
            texts=texts if job.settings.keep_text else None)
        design = design_for(job.settings, job.task)
        current = self._parts.config().models[job.model.name].variants.get(job.candidate.name, job.candidate)
        allowed_now = current.allows(job.task) and current.rollout.stage is not RolloutStage.SHADOW
        conclusion = self._verdicts.add(record, design, allowed_now=allowed_now)
        metrics = self._parts.metrics
        metrics.loss.labels(job.candidate.key, job.task).inc(max(0.0, score.loss))
        state = self._verdicts.state(job.candidate.key, job.task)
        if state is not None:
            metrics.evidence.labels(job.candidate.key, job.task).set(state.log_wealth_loss / design.threshold)
        if conclusion is not None:
            await self._parts.on_conclusion(job.candidate.key, job.task, conclusion)
        self._on_pair()  # last: a table that shows a conclusion shows one already acted on

    async def _run(self, job: Job, variant: Variant, data: dict[str, Any]) -> tuple[dict[str, Any], float] | None:
        """The completion of ``variant`` to the job's request, sent as sheddable work once a
        replica of it has slack (within ``slack_wait_s``); None when none had."""
        director = self._parts.director
        pinned = {**data, "model": f"{job.model.name}:{variant.name}"}
        headers = {"x-duet-task": job.task, "x-duet-priority": "sheddable"}
        exchange = director.open(Inbound(ChatBody.model_validate(pinned), headers), f"{job.request_id}.shadow")
        if not await self._slack(exchange, job.settings.slack_wait_s):
            return None  # planned only: no hook saw it, so nothing to undo
        transport = self._parts.transport(upstream_request(exchange, CHAT_PATH, dict(pinned)))
        answer: Answer = await director.dispatch(exchange, transport)
        director.first_token(exchange)
        payload, outcome = finish_body(answer, ModelRewrite.between(variant.served_model_name, pinned["model"]),
                                       exchange.plan.profile.input_tokens)
        await director.finish(exchange, outcome)
        if answer.status != 200:
            raise ValueError(f"{variant.key} answered {answer.status}")
        completion = orjson.loads(payload)
        if not isinstance(completion, dict):
            raise ValueError(f"{variant.key} answered a non-object")
        return completion, outcome.duration_s * 1e3

    async def _slack(self, exchange: Exchange, wait_s: float) -> bool:
        """Whether the request may go now: admission forwards it, and its prompt's prefill on the
        head replica fits in the least slack of the live requests there. Looks again every
        ``RECHECK_S`` for ``wait_s`` (replanning: the head replica may change)."""
        director, deadline = self._parts.director, time.perf_counter() + wait_s
        while True:
            if exchange.plan.decision.ranked and director.assess(exchange).action is Action.FORWARD \
                    and self._fits(exchange):
                return True
            if time.perf_counter() >= deadline:
                return False
            await asyncio.sleep(RECHECK_S)
            director.replan(exchange)

    def _fits(self, exchange: Exchange) -> bool:
        head = exchange.plan.decision.ranked[0].id
        least = self._parts.ledgers.decodes.least_slack.get(head)
        return least is None or decode_claim(exchange.plan).prefill_ms.get(head, 0.0) < least


def shadow_body(job: Job) -> tuple[dict[str, Any], bool]:
    """The body the shadow side gets: not streamed, and reproducible (a seed from the request id
    when the client gave neither temperature 0 nor a seed). Returns it and whether the client's
    own settings were deterministic (then the live side is reproducible as well)."""
    data = {k: v for k, v in job.body.items() if k not in ("stream", "stream_options", "model")}
    deterministic = data.get("temperature") == 0 or data.get("seed") is not None
    if not deterministic:
        data["seed"] = int(request_draw(job.request_id, b"seed") * 2**31)
    return data, deterministic


def _text(completion: dict[str, Any]) -> str:
    return orjson.dumps(completion, option=orjson.OPT_SORT_KEYS).decode()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
