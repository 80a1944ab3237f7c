"""Replay scores: every policy held to the same parity verdicts, and latency percentiles."""

from __future__ import annotations

import pytest

from gateway.fleet.replay.report import percentiles, summarize, table
from gateway.fleet.replay.request_result import RequestResult
from gateway.flow import Budget

PARITY = {"standard": None, "fast": frozenset({"chat", "coding"})}
BUDGET = Budget(ttft_ms=1000, tpot_ms=50)


def served(task, variant, ttft_s=0.2, e2e_s=1.0, output=21):
    return RequestResult(0.0, task, "ok", variant, 100, output, ttft_s, e2e_s, budget=BUDGET)


def test_a_request_served_where_parity_refuses_its_task_is_a_quality_miss_whatever_its_latency():
    results = [
        served("chat", "fast"),                        # good
        served("long-context", "fast"),                # met its budget, but on a variant parity refuses
        served("long-context", "standard"),            # good
        served("chat", "standard", ttft_s=3.0, e2e_s=4.0),  # allowed, missed its TTFT
        RequestResult(0.0, "long-context", "rejected", None, 100, 10, budget=BUDGET),  # not served: no quality miss
    ]
    summary = summarize(results, 10.0, PARITY)
    assert summary["slo_attainment"] == 0.6
    assert (summary["good_requests"], summary["good_fraction"], summary["quality_misses"]) == (2, 0.4, 1)
    # Without verdicts every variant keeps every task.
    assert summarize(results, 10.0)["good_requests"] == 3
    assert "| 60.00% | 40.00% | 1 |" in table({"p": summary})


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [([], {"p50": None, "p90": None, "p99": None}),
     ([0.001 * i for i in range(1, 101)], {"p50": 50.0, "p90": 90.0, "p99": 99.0}),
     ([None, 0.2, 0.1], {"p50": 100.0, "p90": 200.0, "p99": 200.0})],
)
def test_percentiles_are_nearest_rank_in_milliseconds(seconds, expected):
    assert percentiles(seconds) == expected
