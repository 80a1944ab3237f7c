"""Per-task statistics from plain data: accuracies, the paired bootstrap interval, verdicts."""

from __future__ import annotations

import pytest

from quantize.evals.items import EvalItem, Verdict
from quantize.parity.client import Completion
from quantize.parity.run import Answered, EndpointTiming, ItemResult, TaskRun
from quantize.parity.stats import ALLOWED, NOT_ALLOWED, min_samples, paired_bootstrap_ci, task_stats


def run_of(pairs: list[tuple[bool, bool]], answers: list[tuple[str, str]] | None = None) -> TaskRun:
    answers = answers or [("a", "a")] * len(pairs)
    results = []
    for i, ((std, cand), (std_answer, cand_answer)) in enumerate(zip(pairs, answers, strict=True)):
        item = EvalItem(f"x-{i}", "coding", {"messages": []}, None)
        done = Completion({}, None, 10, 0.1)
        results.append(ItemResult(item, Answered(done, Verdict(item.id, "coding", std, float(std), std_answer)),
                                  Answered(done, Verdict(item.id, "coding", cand, float(cand), cand_answer))))
    return TaskRun("coding", tuple(results), EndpointTiming(100, 2.0, 0), EndpointTiming(300, 2.0, 1))


def test_identical_verdicts_give_a_zero_interval_and_allowed() -> None:
    stats = task_stats(run_of([(True, True), (False, False)] * 30), tolerance=0.05, seed=0)
    assert (stats.standard_acc, stats.candidate_acc, stats.diff) == (0.5, 0.5, 0.0)
    assert stats.ci95 == (0.0, 0.0) and stats.verdict == ALLOWED and stats.agreement == 1.0


def test_a_candidate_wrong_everywhere_is_not_allowed() -> None:
    stats = task_stats(run_of([(True, False)] * 20), tolerance=0.05, seed=0)
    assert stats.diff == -1.0 and stats.ci95 == (-1.0, -1.0) and stats.verdict == NOT_ALLOWED
    assert stats.agreement == 0.0


def test_a_small_loss_is_allowed_only_within_tolerance() -> None:
    pairs = [(True, True)] * 95 + [(True, False)] * 5  # 5% loss, sure of it
    assert task_stats(run_of(pairs), tolerance=0.2, seed=0).verdict == ALLOWED
    assert task_stats(run_of(pairs), tolerance=0.01, seed=0).verdict == NOT_ALLOWED


def test_too_few_samples_cannot_prove_parity() -> None:
    # One discordant item in five: the interval reaches far below -5%.
    stats = task_stats(run_of([(True, True)] * 4 + [(True, False)]), tolerance=0.05, seed=0)
    assert stats.ci95[0] < -0.05 and stats.verdict == NOT_ALLOWED


def test_no_disagreement_in_few_samples_is_not_proof() -> None:
    """The bootstrap collapses to [0, 0] when the variants never disagree; the rule of three
    still asks for 3 / tolerance items."""
    assert min_samples(0.05) == 60 and min_samples(0.5) == 6
    few = task_stats(run_of([(True, True)] * 59), tolerance=0.05, seed=0)
    assert few.ci95 == (0.0, 0.0) and few.verdict == NOT_ALLOWED and "59 samples < 60" in few.reason
    assert task_stats(run_of([(True, True)] * 60), tolerance=0.05, seed=0).verdict == ALLOWED


def test_the_interval_holds_the_difference_and_is_seeded() -> None:
    standard = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1] * 5
    candidate = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1] * 5
    low, high = paired_bootstrap_ci(standard, candidate, seed=7)
    diff = (sum(candidate) - sum(standard)) / len(standard)
    assert low <= diff <= high and low < high
    assert paired_bootstrap_ci(standard, candidate, seed=7) == (low, high)


def test_pairing_narrows_the_interval() -> None:
    """Both right on the same items: the paired interval is a point, though accuracy is 50%."""
    same = [1, 0] * 25
    assert paired_bootstrap_ci(same, same, seed=0) == (0.0, 0.0)


def test_same_answer_rate_and_tokens_per_s() -> None:
    stats = task_stats(run_of([(False, False)] * 2, [("3", "3"), ("3", "4")]), tolerance=0.05, seed=0)
    assert stats.same_answer == 0.5 and stats.agreement == 1.0
    assert (stats.standard_tokens_per_s, stats.candidate_tokens_per_s) == (50.0, 150.0)
    assert stats.candidate_errors == 1


@pytest.mark.parametrize("n", [0, 1])
def test_degenerate_sizes(n: int) -> None:
    assert paired_bootstrap_ci([1] * n, [0] * n, seed=0) == ((0.0, 0.0) if n == 0 else (-1.0, -1.0))
