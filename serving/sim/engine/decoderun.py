"""Decode runs: consecutive decode-only steps of an unchanging batch, planned in one go.

In trace replay (no per-token events) most steps only add one token to every running
sequence: nothing arrives, finishes, is admitted or preempted, and nothing is reported. Such a
stretch is planned at once — each step's end from the same cost formula and the same jitter
draws, in the same order, as step by step — and the sequences are brought up to date only
when the engine is advanced into the run or something changes it (a submit, an abort, a new
slowdown: the run is then cut where it stands and the random stream rewound to the draws
the steps begun so far made). Events and state are those of the step-by-step engine, bit for
bit; what is saved is the per-step, per-sequence work, and the calls: the engine's next
event is the run's end.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Callable

from serving.sim.engine.events import EngineCounters
from serving.sim.engine.kvcache import KVCache
from serving.sim.engine.sequence import Seq, Step
from serving.sim.engine.stepcost import BatchShape, step_duration
from serving.sim.profile import StepCost

MIN_STEPS = 2  # shorter stretches gain nothing over the ordinary step
# Steps planned at once: a run is usually cut by the next arrival (its later jitter draws are
# then wasted and rewound); one that is not is followed by another run.
MAX_STEPS = 32


class DecodeRun:
    """A planned stretch of decode steps over ``seqs``: ``ends[i]`` is when step i ends;
    ``completed`` steps are applied to the sequences, and step ``completed`` has begun
    (blocks grown) unless the run is over."""

    __slots__ = ("seqs", "ends", "rng_state", "completed", "begun")

    def __init__(self, seqs: list[Seq], ends: list[float], rng_state: object | None) -> None:
        self.seqs = seqs
        self.ends = ends
        self.rng_state = rng_state  # the random state before the first jitter draw (None: no jitter)
        self.completed = 0
        self.begun = 0

    def steps_ended_by(self, to: float) -> int:
        return bisect_right(self.ends, to)


def silent_steps(seqs: list[Seq], kv: KVCache) -> int:
    """How many steps ``seqs`` can take in which nothing happens but one more token each:
    every step before the first of them finishes, while the KV cache holds their growth."""
    until_finish = min(min(s.target - s.generated for s in seqs) - 1, MAX_STEPS)
    if until_finish < MIN_STEPS or _fits(seqs, kv, until_finish):
        return until_finish
    low, high = 0, until_finish  # _fits(low) holds, _fits(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _fits(seqs, kv, middle) else (low, middle)
    return low


def _fits(seqs: list[Seq], kv: KVCache, steps: int) -> bool:
    """Whether the blocks that ``steps`` decode steps grow the sequences to are free."""
    blocks_for = kv.blocks_for
    extra = sum(max(0, blocks_for(s.computed + steps) - s.blocks) for s in seqs)
    return extra <= kv.free_blocks


def plan(seqs: list[Seq], start: float, steps: int, cost: StepCost, slowdown: float,
         rng: random.Random) -> DecodeRun:
    """The run of ``steps`` decode steps of ``seqs`` from ``start`` (draws their jitter now)."""
    n, context, at = len(seqs), sum(s.computed for s in seqs), start
    jitter = cost.jitter
    rng_state = rng.getstate() if jitter else None
    # step_duration's sum, term by term in its order (so the floats are the same bits)
    fixed = cost.base_s + cost.prefill_s_per_token * 0 + cost.decode_s_per_token * n
    assert fixed == step_duration(cost, None, BatchShape(0, n, 0, 0))
    kv_read, lognormal, ends = cost.kv_read_s_per_token, rng.lognormvariate, []
    for _ in range(steps):
        seconds = fixed + kv_read * context
        if jitter:
            seconds *= lognormal(0.0, jitter)
        at = at + seconds * slowdown
        ends.append(at)
        context += n
    return DecodeRun(seqs, ends, rng_state)


def catch_up(run: DecodeRun, completed: int, kv: KVCache, counters: EngineCounters,
             observer: Callable[[int], None] | None) -> None:
    """Apply the run's steps up to ``completed`` to its sequences, and begin the next one
    (grow its blocks) if the run goes on."""
    more = completed - run.completed
    in_flight = completed < len(run.ends)
    blocks_for = kv.blocks_for
    for seq in run.seqs:
        seq.computed += more
        seq.generated += more
        want = blocks_for(seq.computed + 1 if in_flight else seq.computed)
        if want > seq.blocks:
            kv.used_blocks += want - seq.blocks
            seq.blocks = want
    n = len(run.seqs)
    counters.generation_tokens += n * more
    begun = completed + in_flight
    for _ in range(begun - run.begun):
        counters.steps += 1
        if observer is not None:
            observer(n)
    run.completed, run.begun = completed, begun


def cut(run: DecodeRun, cost: StepCost, rng: random.Random) -> Step:
    """End the run where it stands: its step in flight becomes an ordinary step, and the random
    stream is rewound to just after that step's jitter draw."""
    if run.rng_state is not None:
        rng.setstate(run.rng_state)  # type: ignore[arg-type]
        for _ in range(run.begun):
            rng.lognormvariate(0.0, cost.jitter)
    return Step(run.ends[run.completed], [(seq, 1, 0) for seq in run.seqs])
