"""What one engine step costs, and what speculation gains in it.

The cost model is the roofline in two terms: a fixed part per step (reading the weights once,
launching kernels; dominant at small batch, where decoding is memory-bound) and parts
proportional to the tokens computed (dominant at large batch, where it is compute-bound).
Speculation trades the second for the first: verifying ``k`` drafts costs ``k`` more tokens of
compute in the same step, which is nearly free at batch 1 and pure overhead at high batch —
the load-dependent speed-up that the router must predict.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from serving.sim.profile import Speculation, StepCost


@dataclass(frozen=True, slots=True)
class BatchShape:
    """What a step computes: prompt tokens (chunked prefill), decode tokens (one per decoding
    sequence plus its drafts), context tokens those decoders attend over, drafting sequences."""

    prefill_tokens: int
    decode_tokens: int
    context_tokens: int
    drafting_seqs: int


def step_duration(cost: StepCost, spec: Speculation | None, batch: BatchShape) -> float:
    """Seconds one step takes for ``batch``, before jitter and slowdown."""
    seconds = (
        cost.base_s
        + cost.prefill_s_per_token * batch.prefill_tokens
        + cost.decode_s_per_token * batch.decode_tokens
        + cost.kv_read_s_per_token * batch.context_tokens
    )
    if spec is not None and batch.drafting_seqs:
        seconds += spec.draft_s_per_step + spec.draft_s_per_seq * batch.drafting_seqs
    return seconds


def accepted_drafts(rng: random.Random, acceptance: float, drafted: int) -> int:
    """Draft tokens accepted out of ``drafted``: each is accepted with probability
    ``acceptance`` until the first rejection (so P(accepted >= i) = acceptance**i)."""
    if drafted <= 0 or acceptance <= 0.0:
        return 0
    if acceptance >= 1.0:
        return drafted
    u = 1.0 - rng.random()  # in (0, 1]: log is finite
    return min(drafted, int(math.log(u) / math.log(acceptance)))


def expected_tokens_per_step(acceptance: float, drafted: int) -> float:
    """Mean tokens a drafting sequence gains per step: 1 + acceptance + ... + acceptance**k."""
    return sum(acceptance**i for i in range(drafted + 1))
