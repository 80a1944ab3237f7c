"""Output lengths learned per (model, task): quantiles from a bounded, decaying histogram."""

from __future__ import annotations

import random
import statistics

import pytest

from gateway.fleet.workload.traces import load_trace
from gateway.state.lengths import LengthHistogram, LengthSettings, NoEstimates, OutputLengths


@pytest.mark.parametrize("trace", ["code", "conv"])
def test_the_estimate_converges_within_20_percent_of_the_task_median(trace):
    """A few hundred answers drawn from a real trace (Azure 2023, CC-BY) give its median."""
    lengths = [r.output_tokens for r in load_trace(trace).requests]
    rng = random.Random(0)
    estimates = OutputLengths()
    for _ in range(300):
        estimates.add("m", "t", rng.choice(lengths))
    median = statistics.median(lengths)
    estimate = estimates.expected("m", "t")
    assert estimate is not None and abs(estimate - median) <= 0.2 * median


def test_no_estimate_until_enough_answers_then_one_per_model_and_task():
    estimates = OutputLengths(LengthSettings(min_samples=5))
    for _ in range(4):
        estimates.add("m", "chat", 100)
    assert estimates.expected("m", "chat") is None
    estimates.add("m", "chat", 100)
    assert estimates.expected("m", "chat") == pytest.approx(100, rel=0.1)
    assert estimates.expected("m", "coding") is None and estimates.expected("other", "chat") is None
    assert NoEstimates().expected("m", "chat") is None


@pytest.mark.parametrize(("q", "expected"), [(0.1, 10), (0.5, 100), (0.9, 1000)])
def test_quantiles_read_from_the_histogram(q, expected):
    histogram = LengthHistogram()
    for tokens in [10] * 20 + [100] * 60 + [1000] * 20:
        histogram.add(tokens)
    assert histogram.quantile(q) == pytest.approx(expected, rel=0.2)


def test_recent_answers_outweigh_old_ones_and_memory_stays_bounded():
    estimates = OutputLengths(LengthSettings(half_life_samples=50))
    for _ in range(2000):
        estimates.add("m", "chat", 50)
    for _ in range(300):
        estimates.add("m", "chat", 400)
    assert estimates.expected("m", "chat") == pytest.approx(400, rel=0.1)
    histogram = estimates.histogram("m", "chat")
    assert histogram is not None and len(histogram.weights) == 72 and histogram.samples == 2300


def test_lengths_past_the_last_bucket_and_zero_still_count():
    histogram = LengthHistogram()
    histogram.add(0)
    histogram.add(10**9)
    assert histogram.quantile(0.25) == pytest.approx(1, rel=0.2)
    assert histogram.quantile(0.99) is not None
