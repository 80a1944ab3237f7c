"""The replica-state benchmark's logic: its synthetic exposition is what vLLM prints (every engine
parsed), and its store costs come out as microseconds per call."""

from __future__ import annotations

import asyncio

from gateway.flow import parse_vllm_metrics
from loadtests.benchmarks.replica_state.run import store_costs, synthetic_metrics


def test_the_synthetic_exposition_parses_as_two_running_engines() -> None:
    stats = parse_vllm_metrics(synthetic_metrics(engines=2))
    assert (stats.running, stats.waiting) == (2, 2)


def test_store_costs_are_positive_microseconds() -> None:
    round_trip, snapshot = asyncio.run(store_costs(replicas=2, repeat=10))
    assert round_trip > 0 and snapshot > 0
