"""The engine model: vLLM's continuous-batching scheduler, in virtual time, with no I/O.

Driven by explicit time: ``submit(request, now)`` queues a request; ``next_event_time()`` says
when something will next happen; ``advance(to)`` runs every step that ends by ``to`` and returns
the events (tokens, finishes). Same seed and same calls give the same events.

Each step computes what ``scheduler.Scheduler`` plans, as vLLM v1's scheduler does (running
sequences first, then waiting ones, under the token budget and ``max_num_seqs``, preempting for
KV blocks); the engine times the step, applies it, and reports what it produced.

The prefix cache as V1 keeps it: a prompt's full blocks become reusable as soon as they are
computed (chunk by chunk, not when the prompt ends), so a preempted sequence's recompute and a
request sharing a prefix still being prefilled find them; a hit is whole blocks only and never
the prompt's last token (``max_cache_hit_length = num_tokens - 1``, so a prompt of exactly
n blocks reuses n - 1); only a request's first admission counts in the prefix-cache counters
(a resumed one counts in V1's separate ``preempted_*`` stats).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from serving.sim.engine import decoderun
from serving.sim.engine.decoderun import DecodeRun
from serving.sim.engine.events import EngineCounters, EngineSnapshot, Event, Finished, Refusal, SimRequest, TokensOut
from serving.sim.engine.kvcache import KVCache
from serving.sim.engine.kvtransfer import Incoming, TransferFaults
from serving.sim.engine.scheduler import Scheduler
from serving.sim.engine.scheduling_order import SchedulingOrder
from serving.sim.engine.sequence import Seq, Step
from serving.sim.engine.stepcost import BatchShape, accepted_drafts, step_duration
from serving.sim.profile import Profile


class Engine:
    """One simulated vLLM engine. ``token_events=False`` reports only first tokens and
    finishes (for fast trace replay, where per-step token events are not needed); stretches of
    steps that report nothing then run as ``decoderun`` runs, with the same events and state."""

    def __init__(self, profile: Profile, *, seed: int = 0, token_events: bool = True,
                 step_observer: Callable[[int], None] | None = None, scheduling: str = "fcfs",
                 transfer_faults: TransferFaults | None = None) -> None:
        self.profile = profile
        self._step_observer = step_observer  # called with each step's token count (for metrics)
        self.counters = EngineCounters()
        self.clock = 0.0
        self._slowdown = 1.0  # failure injection: every step takes this many times longer
        self._limits = profile.engine
        self._spec = profile.speculation
        self._rng = random.Random(seed)
        self._token_events = token_events
        self._kv = KVCache(profile.engine.kv_cache_tokens, profile.engine.block_size)
        self._sched = Scheduler(profile.engine, self._spec, self._kv, SchedulingOrder.named(scheduling),
                                self.counters, self._rng)
        self._by_id: dict[str, Seq] = {}
        self._step: Step | None = None
        self._run: DecodeRun | None = None
        self._next_start = 0.0  # a new step may not start before the previous one ended
        self._events: list[Event] = []
        # Requests whose KV is on its way from a prefill engine.
        self._transfers = Incoming(profile, transfer_faults or TransferFaults(seed=seed), self.counters)
        if self._spec is not None:
            self.counters.spec_accepted_per_position = [0] * self._spec.num_speculative_tokens

    @property
    def slowdown(self) -> float:
        return self._slowdown

    @slowdown.setter
    def slowdown(self, factor: float) -> None:
        self._cut_run()  # steps already begun keep their length; later ones take the new one
        self._slowdown = factor

    # ---- driving -------------------------------------------------------------------------

    def submit(self, request: SimRequest, now: float) -> Refusal | None:
        """Queue ``request`` arriving at ``now``; returns why it was refused, or None.

        Call ``advance(now)`` first so the queue length that admission checks is current.
        """
        self._cut_run()
        max_tokens = min(request.max_tokens, self._limits.max_model_len - request.prompt_tokens)
        if max_tokens < 1:
            return Refusal.TOO_LONG
        if request.request_id in self._by_id:
            return Refusal.DUPLICATE_ID
        if len(self._sched.waiting) + len(self._transfers) >= self._limits.max_waiting:
            return Refusal.QUEUE_FULL
        refusal = self._role_refusal(request)
        if refusal is not None:
            return refusal
        target = 1 if request.remote_decode else self._target(request, max_tokens)
        seq = Seq(request, now, now + self.profile.step.frontend_s, target)
        if self._spec is not None:
            task = self._spec.for_task(request.task)
            seq.acceptance, seq.proposal_rate = task.acceptance, task.proposal_rate
        self._by_id[request.request_id] = seq
        if request.remote_prefill:
            self._transfers.start(seq)
        else:
            self._sched.enqueue(seq)
        return None

    def _role_refusal(self, request: SimRequest) -> Refusal | None:
        """Why this engine's role forbids ``request`` (None: it may take it)."""
        role = self._limits.role
        if role == "prefill" and not request.remote_decode:
            return Refusal.PREFILL_ONLY
        if role == "decode" and not request.remote_prefill:
            return Refusal.DECODE_ONLY
        return None

    def _land_transfers(self, now: float) -> None:
        """Transfers done by ``now`` join the waiting queue; a failed one under the ``fail``
        policy ends there (``error``), under ``recompute`` it prefills here."""
        for seq in self._transfers.landed(now):
            if seq.kv_failed and self._transfers.faults.policy == "fail":
                self._finish(seq, "error", seq.ready_at)
            else:
                self._sched.enqueue(seq)

    def abort(self, request_id: str, now: float) -> None:
        """Drop a request (client went away): frees its KV blocks; emits ``Finished(abort)``."""
        self._cut_run()
        seq = self._by_id.get(request_id)
        if seq is None:
            return
        if not self._sched.remove(seq):
            self._transfers.discard(seq)
        self._finish(seq, "abort", max(now, self.clock))

    def next_event_time(self) -> float | None:
        """When the next step ends or starts (a run's last step ends); None when there is
        nothing to do."""
        if self._run is not None:
            return self._run.ends[-1]
        if self._step is not None:
            return self._step.end
        if self._sched.running:
            return max(self._next_start, self.clock)
        waiting = self._sched.waiting
        start = max(self._next_start, self.clock, waiting[0].ready_at) if waiting else None
        if (landing := self._transfers.next_landing()) is not None:  # KV landing may start a step sooner
            landing = max(self._next_start, self.clock, landing)
            start = landing if start is None else min(start, landing)
        return start

    def advance(self, to: float) -> list[Event]:
        """Run every step that ends by ``to``; return the events since the last call, in order."""
        while True:
            if self._run is not None:
                if not self._advance_run(to):
                    break
                continue
            if self._step is not None:
                if self._step.end > to:
                    break
                self._end_step(self._step)
                continue
            start = self.next_event_time()
            if start is None or start > to:
                break
            if not self._start_run(start) and not self._begin_step(start):
                break
        self.clock = max(self.clock, to)
        events, self._events = self._events, []
        return events

    def snapshot(self) -> EngineSnapshot:
        """Gauges now: running and waiting requests, KV cache usage."""
        return EngineSnapshot(
            self.clock, len(self._sched.running), len(self._sched.waiting) + len(self._transfers), self._kv.usage)

    def in_flight(self) -> int:
        """Requests inside the engine (running or waiting)."""
        return len(self._by_id)

    # ---- runs of decode steps (token_events=False) ---------------------------------------

    def _start_run(self, start: float) -> bool:
        """Plan a decode run from ``start`` if the next steps can only add a token to each
        running sequence (nothing waits, nothing prefills, no speculation); whether it did."""
        running = self._sched.running
        if (self._token_events or self._spec is not None or self._sched.waiting or self._transfers or not running
                or len(running) > self._limits.max_num_batched_tokens
                or any(s.req.prompt_tokens + s.generated - s.computed != 1 for s in running)):
            return False
        steps = decoderun.silent_steps(running, self._kv)
        if steps < decoderun.MIN_STEPS:
            return False
        self._run = decoderun.plan(list(running), start, steps, self.profile.step, self._slowdown, self._rng)
        decoderun.catch_up(self._run, 0, self._kv, self.counters, self._step_observer)
        return True

    def _advance_run(self, to: float) -> bool:
        """Bring the run up to ``to``; whether it is over (the engine then goes on from its end)."""
        run = self._run
        assert run is not None
        completed = run.steps_ended_by(to)
        if completed > run.completed:
            decoderun.catch_up(run, completed, self._kv, self.counters, self._step_observer)
            self._next_start = run.ends[completed - 1]
            self.clock = max(self.clock, self._next_start)
        if completed < len(run.ends):
            return False
        self._run = None
        return True

    def _cut_run(self) -> None:
        """Something is about to change the batch: the run's step in flight becomes ordinary."""
        if self._run is not None:
            self._step = decoderun.cut(self._run, self.profile.step, self._rng)
            self._run = None

    # ---- one step ------------------------------------------------------------------------

    def _begin_step(self, start: float) -> bool:
        self._land_transfers(start)
        plan = self._sched.plan(start)
        if not plan:
            return False
        prefill = decode = context = drafting = 0
        for seq, tokens, drafted in plan:
            if seq.req.prompt_tokens + seq.generated - seq.computed > 1:
                prefill += tokens  # a chunk of a prompt (or of a recompute after preemption)
            else:
                decode += tokens
                context += seq.computed
                drafting += drafted > 0
        seconds = step_duration(self.profile.step, self._spec, BatchShape(prefill, decode, context, drafting))
        if self.profile.step.jitter:
            seconds *= self._rng.lognormvariate(0.0, self.profile.step.jitter)
        self._step = Step(start + seconds * self._slowdown, plan)
        self.counters.steps += 1
        if self._step_observer is not None:
            self._step_observer(prefill + decode)
        return True

    def _end_step(self, step: Step) -> None:
        self._step = None
        now = self._next_start = self.clock = step.end
        finished = False
        for seq, tokens, drafted in step.plan:
            if not seq.done:
                finished |= self._progress(seq, tokens, drafted, now)
        if finished:
            self._sched.drop_finished()

    def _progress(self, seq: Seq, tokens: int, drafted: int, now: float) -> bool:
        """Apply one step's work to ``seq``; returns whether it finished."""
        prompt = seq.req.prompt_tokens
        seq.computed += tokens - drafted
        self._cache_computed_blocks(seq)
        if seq.computed < prompt + seq.generated:
            return False  # mid-prompt chunk: no token sampled yet
        accepted = 0
        if drafted:
            accepted = accepted_drafts(self._rng, seq.acceptance, drafted)
            counters = self.counters
            counters.spec_drafts += 1
            counters.spec_draft_tokens += drafted
            counters.spec_accepted_tokens += accepted
            per_position = counters.spec_accepted_per_position
            for position in range(accepted):
                per_position[position] += 1
        new = min(1 + accepted, seq.target - seq.generated)
        seq.computed += new - 1
        seq.generated += new
        self.counters.generation_tokens += new
        first = seq.first_token_at is None
        if first:
            seq.first_token_at = now
            self.counters.prompt_tokens += prompt
            self.counters.first_tokens += 1
            self.counters.ttft_s_total += now - seq.arrival
        if first or self._token_events:
            self._events.append(TokensOut(seq.req.request_id, now, new, first))
        if seq.generated < seq.target:
            return False
        reason = "stop" if seq.target < min(seq.req.max_tokens, self._limits.max_model_len - prompt) else "length"
        if seq.req.remote_decode:
            reason = "length"  # vLLM's prefill request: max_tokens 1, the answer decoded elsewhere
        self._finish(seq, reason, now)
        return True

    # ---- helpers -------------------------------------------------------------------------

    def _cache_computed_blocks(self, seq: Seq) -> None:
        """Make the prompt blocks ``seq`` has fully computed reusable (V1 caches each block as it
        fills, so a preempted sequence leaves its computed prefix behind for its recompute)."""
        full = min(len(seq.req.prefix_hashes), seq.computed // self._kv.block_size)
        if full > seq.cached_blocks:
            self._kv.remember(seq.req.prefix_hashes[seq.cached_blocks:full])
            seq.cached_blocks = full

    def _finish(self, seq: Seq, reason: str, now: float) -> None:
        seq.done = True
        self._kv.release(seq.blocks)
        seq.blocks = 0
        del self._by_id[seq.req.request_id]
        # vLLM's queue time starts when the engine core receives the request (after the frontend)
        queued = max(0.0, (seq.scheduled_at if seq.scheduled_at is not None else now) - seq.ready_at)
        ttft = None if seq.first_token_at is None else seq.first_token_at - seq.arrival
        kv_ready = seq.req.remote_decode and reason == "length" and seq.generated > 0
        self._events.append(Finished(
            seq.req.request_id, now, reason, seq.req.prompt_tokens, seq.generated,
            seq.cached_tokens, queued, ttft, now - seq.arrival, seq.preemptions, kv_ready,
        ))

    def _target(self, request: SimRequest, max_tokens: int) -> int:
        """Tokens this request will generate: its natural length within [min_tokens, max_tokens]."""
        if request.ignore_eos:
            return max_tokens
        natural = request.natural_tokens
        if natural is None:
            shape = self.profile.output
            natural = round(shape.natural_tokens_median * math.exp(shape.natural_tokens_sigma * self._rng.gauss()))
        return max(1, min(max_tokens, max(natural, request.min_tokens)))
