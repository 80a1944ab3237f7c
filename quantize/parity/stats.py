"""Per task type: accuracies, their paired difference with a 95% bootstrap interval, agreement,
and the verdict at a tolerance.

The paired bootstrap resamples ITEMS (each item keeps its standard and candidate verdicts
together), so the interval reflects that both variants answered the same questions: two
variants that agree item by item get a narrow interval even when both are often wrong.

Verdict: ``allowed`` when the interval's lower bound is >= -tolerance, i.e. the data rule out
(at 95%) a loss larger than the tolerance, AND there are at least ``min_samples(tolerance)`` =
ceil(3 / tolerance) items. The second rule covers the bootstrap's blind spot: when the two
variants never disagree, every resample is identical and the interval collapses to [0, 0] even
for 5 items, while the rule of three says a loss rate up to 3/n is still plausible at 95%. Few
samples therefore cannot prove parity: the gate errs towards keeping tasks on the standard.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from quantize.parity.run import ItemResult, TaskRun

RESAMPLES = 2000
ALLOWED, NOT_ALLOWED = "allowed", "not allowed"


@dataclass(frozen=True, slots=True)
class TaskStats:
    task: str
    samples: int
    standard_acc: float
    candidate_acc: float
    diff: float
    ci95: tuple[float, float]
    verdict: str
    agreement: float  # same verdict (both right or both wrong)
    same_answer: float  # same normalised answer
    standard_tokens_per_s: float
    candidate_tokens_per_s: float
    standard_errors: int
    candidate_errors: int
    reason: str  # why the verdict


def min_samples(tolerance: float) -> int:
    """Items needed before no observed loss bounds the loss rate by ``tolerance`` (rule of three)."""
    return math.ceil(3 / tolerance - 1e-9)


def paired_bootstrap_ci(standard: Sequence[float], candidate: Sequence[float], *, seed: int,
                        resamples: int = RESAMPLES) -> tuple[float, float]:
    """95% percentile interval of mean(candidate - standard) over ``resamples`` resamplings of
    the item indices (seeded: the same data and seed give the same interval)."""
    diffs = np.asarray(candidate, dtype=float) - np.asarray(standard, dtype=float)
    if diffs.size == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, diffs.size, size=(resamples, diffs.size))
    means = diffs[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return (float(low), float(high))


def task_stats(run: TaskRun, *, tolerance: float, seed: int) -> TaskStats:
    results = run.results
    std = [float(r.standard.verdict.correct) for r in results]
    cand = [float(r.candidate.verdict.correct) for r in results]
    n = len(results)
    low, high = paired_bootstrap_ci(std, cand, seed=seed)
    verdict, reason = _verdict(low, n, tolerance)
    return TaskStats(
        task=run.task, samples=n, standard_acc=_mean(std), candidate_acc=_mean(cand),
        diff=_mean(cand) - _mean(std), ci95=(low, high),
        verdict=verdict,
        agreement=_mean([float(s == c) for s, c in zip(std, cand, strict=True)]),
        same_answer=_mean([float(_same_answer(r)) for r in results]),
        standard_tokens_per_s=run.standard.tokens_per_s, candidate_tokens_per_s=run.candidate.tokens_per_s,
        standard_errors=run.standard.errors, candidate_errors=run.candidate.errors, reason=reason)


def _verdict(low: float, samples: int, tolerance: float) -> tuple[str, str]:
    needed = min_samples(tolerance)
    if samples < needed:
        return NOT_ALLOWED, f"{samples} samples < {needed} needed at tolerance {tolerance}"
    if low < -tolerance:
        return NOT_ALLOWED, f"95% CI lower bound {low:+.3f} < -{tolerance}"
    return ALLOWED, f"95% CI lower bound {low:+.3f} >= -{tolerance}"


def _same_answer(result: ItemResult) -> bool:
    return result.standard.verdict.answer == result.candidate.verdict.answer


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
