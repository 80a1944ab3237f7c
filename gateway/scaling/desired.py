"""How many replicas each variant needs for the demand it would serve: the number behind
``duet_desired_replicas{model, variant}``.

1. Each task type's demand goes where the cost-first router sends it (``cheapest-within-budget``,
   the autoscaled fleet's objective): to the cheapest variant, per its own mean request, that
   parity allows and is fully rolled out; a canary variant takes its share first.
2. A variant's replica serves its tasks at the largest decode batch at which the tightest TPOT
   budget among them still holds on its step model (``SpeedPrior``: base + b x B (1 + drafts) +
   c x context, over the task's tokens per step), within its KV cache and ``max_num_seqs``.
3. A request then keeps a replica busy for its prefill (prompt / prefill rate) and its share of
   the decode steps it is in (answer / tokens per step x step / batch); the variant's demand in
   replicas is the sum over its tasks of rate x that, divided by its ``utilisation`` (the plan's
   headroom), rounded up; or, where the variant has a capacity curve (fitted over several loads),
   the curve at the busy replicas of all the model's variants.
4. Never fewer than ``min_replicas``, nor than one where parity makes the variant the only home
   of a task type the config defines, or of one of ``warm_tasks`` where the config names them (a
   request of it could come at any moment, and a replica takes minutes to start), nor than the
   variant's schedule asks for at ``seconds_of_day`` (``schedule.py``); never more than
   ``max_replicas``.

What the model leaves out, the utilisation absorbs: prompts stalling decode steps, queueing near
saturation, the spread of lengths around their means. ``duet plan`` measures it by replaying
the router against the simulator and writes the utilisation the fleet it found runs at.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gateway.domain import RolloutStage, Variant
from gateway.scaling.demand import TaskDemand
from gateway.scaling.policy import Autoscaling
from gateway.speed import SpeedPrior


@dataclass(frozen=True, slots=True)
class TaskSizing:
    """What sizing needs of a task type from the config: its TPOT budget (ms, None: none) and the
    answer length to assume until answers were seen (the learned or configured typical one)."""

    tpot_ms: float | None
    expected_output_tokens: int


@dataclass(frozen=True, slots=True)
class VariantNeed:
    """One variant's answer: the task types sized onto it (with the share of each), the replicas
    its demand keeps fully busy, the decode batch that assumes, its floor, and the count; for a
    variant of several engine groups, (group, replicas) of that count per group
    (``group_split.with_groups``; empty otherwise)."""

    variant: str
    tasks: tuple[tuple[str, float], ...]
    busy_replicas: float
    batch: int
    floor: int
    desired: int
    groups: tuple[tuple[str, int], ...] = ()


def desired_replicas(variants: Sequence[Variant], demand: Mapping[str, TaskDemand],
                     sizing: Mapping[str, TaskSizing], autoscaling: Autoscaling,
                     seconds_of_day: float | None = None) -> dict[str, VariantNeed]:
    """variant name -> its need, for one model's ``variants`` (``sizing``: every task type the
    config defines; a task in ``demand`` but not in ``sizing`` is sized with no TPOT budget), at
    ``seconds_of_day`` (UTC) for a schedule's floor (None: no schedule applies, e.g. the
    Deployment's static floor)."""
    shares = _placement(variants, demand, sizing)
    needs: dict[str, VariantNeed] = {}
    for variant in variants:
        placed = {task: share for (task, name), share in shares.items() if name == variant.name and share > 0}
        lengths = {task: _lengths(task, demand[task], sizing) for task in placed}
        batch = min((_largest_batch(variant.speed, task, *lengths[task], _tpot_s(task, sizing)) for task in placed),
                    default=variant.speed.max_num_seqs)
        busy = sum(demand[task].rate_per_s * share * _replica_s(variant.speed, task, *lengths[task], batch)
                   for task, share in placed.items())
        warm = sizing if autoscaling.warm_tasks is None else autoscaling.warm_tasks
        floor = max(autoscaling.min_replicas.get(variant.name, 0), _parity_floor(variant, variants, warm),
                    autoscaling.scheduled(variant.name, seconds_of_day))
        wanted = math.ceil(busy / autoscaling.utilisation_of(variant.name) - 1e-9)
        needs[variant.name] = VariantNeed(variant.name, tuple(sorted(placed.items())), busy, batch, floor,
                                          _bounded(wanted, floor, autoscaling))
    return _on_curves(needs, autoscaling)


def _bounded(wanted: int, floor: int, autoscaling: Autoscaling) -> int:
    """``wanted`` raised to the floor and capped at ``max_replicas`` (never below the floor)."""
    return min(max(wanted, floor), max(autoscaling.max_replicas, floor))


def _on_curves(needs: dict[str, VariantNeed], autoscaling: Autoscaling) -> dict[str, VariantNeed]:
    """``needs`` with each variant that has a capacity curve sized on it at the busy replicas of
    all the model's variants."""
    busy = sum(need.busy_replicas for need in needs.values())
    for name, curve in autoscaling.capacity_by_variant.items():
        if (need := needs.get(name)) is not None:
            needs[name] = replace(need, desired=_bounded(curve.replicas(busy), need.floor, autoscaling))
    return needs


def _placement(variants: Sequence[Variant], demand: Mapping[str, TaskDemand],
               sizing: Mapping[str, TaskSizing]) -> dict[tuple[str, str], float]:
    """(task, variant) -> the share of the task's demand sized onto the variant."""
    shares: dict[tuple[str, str], float] = {}
    for task, d in demand.items():
        prompt, output = _lengths(task, d, sizing)
        left = 1.0
        for variant in variants:
            if variant.rollout.stage is RolloutStage.CANARY and variant.allows(task):
                share = min(left, variant.rollout.share(task))
                shares[(task, variant.name)] = share
                left -= share
        full = [v for v in variants if v.rollout.stage is RolloutStage.FULL and v.allows(task)]
        if full and left > 0:
            cheapest = min(full, key=lambda v: (v.price.cost_usd(round(prompt), round(output)), v.name))
            shares[(task, cheapest.name)] = shares.get((task, cheapest.name), 0.0) + left
    return shares


def _parity_floor(variant: Variant, variants: Sequence[Variant], tasks: Iterable[str]) -> int:
    """1 when the variant is the only fully rolled-out home of one of ``tasks``."""
    for task in tasks:
        homes = [v.name for v in variants if v.rollout.stage is RolloutStage.FULL and v.allows(task)]
        if homes == [variant.name]:
            return 1
    return 0


def _lengths(task: str, demand: TaskDemand, sizing: Mapping[str, TaskSizing]) -> tuple[float, float]:
    """(mean prompt, mean answer) tokens: the answers seen, else the task's typical one."""
    typical = sizing[task].expected_output_tokens if task in sizing else 256
    return demand.prompt_tokens, typical if demand.output_tokens is None else demand.output_tokens


def _tpot_s(task: str, sizing: Mapping[str, TaskSizing]) -> float | None:
    budget = sizing[task].tpot_ms if task in sizing else None
    return None if budget is None else budget / 1e3


def step_s(speed: SpeedPrior, batch: int, context_tokens: float) -> float:
    """One decode step with ``batch`` sequences attending over ``context_tokens`` each (the
    step model of ``SpeedPrior``, as the step-model predictor reads it)."""
    drafts = speed.draft_tokens
    return (speed.decode_s_per_token + speed.per_seq_s * batch * (1 + drafts)
            + speed.kv_read_s_per_token * batch * context_tokens
            + ((speed.draft_s_per_step + speed.draft_s_per_seq * batch) if drafts else 0.0))


def _largest_batch(speed: SpeedPrior, task: str, prompt: float, output: float, tpot_s: float | None) -> int:
    """The most sequences a replica decodes at once with each one's TPOT within ``tpot_s``: at
    least one (a variant that misses the budget alone is sized at batch 1: more replicas cannot
    make one request faster), at most ``max_num_seqs`` and what its KV cache holds."""
    context = prompt + output / 2
    high = speed.max_num_seqs
    if speed.kv_cache_tokens:
        high = max(1, min(high, int(speed.kv_cache_tokens // max(prompt + output, 1.0))))
    if tpot_s is None:
        return high
    per_step = speed.tokens_per_step_for(task)
    low = 1
    while low < high:  # TPOT grows with the batch: bisect for the last one within budget
        middle = (low + high + 1) // 2
        if step_s(speed, middle, context) / per_step <= tpot_s:
            low = middle
        else:
            high = middle - 1
    return low


def _replica_s(speed: SpeedPrior, task: str, prompt: float, output: float, batch: int) -> float:
    """Replica-seconds one request takes: its prefill, and its share of ``batch``-wide steps."""
    steps = output / speed.tokens_per_step_for(task)
    return prompt / speed.prefill_tokens_per_s + steps * step_s(speed, batch, prompt + output / 2) / batch
