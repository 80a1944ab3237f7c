"""Measure the replica-state hot path: ``begin`` + ``finish`` per request, ``snapshot`` per
request, and ``parse_vllm_metrics`` per scrape.

    python -m loadtests.benchmarks.replica_state.run [--replicas 8] [--metrics tests/fixtures/vllm_cpu/metrics.txt]

Without ``--metrics`` it parses a synthetic two-engine exposition of a realistic size (every
vLLM histogram with its buckets, the way a real server prints them).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from gateway.flow import InMemoryStateStore, Outcome, VllmStats, parse_vllm_metrics


def per_call_us(fn: Callable[[], object], repeat: int) -> float:
    """Best of five runs of ``repeat`` calls, in microseconds per call."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / repeat * 1e6


async def store_costs(replicas: int, repeat: int) -> tuple[float, float]:
    """(begin + finish, snapshot) in microseconds, on a store holding ``replicas`` replicas."""
    store = InMemoryStateStore()
    for i in range(replicas):
        await store.record_health(f"r{i}", True, store.now())
        await store.record_stats(f"r{i}", VllmStats(running=1, waiting=0), store.now())
    outcome = Outcome(
        "r0", ok=True, status=200, ttft_s=0.05, duration_s=1.0, input_tokens=100, output_tokens=50
    )
    start = time.perf_counter()
    for _ in range(repeat):
        await store.begin("r0")
        await store.finish(outcome)
    round_trip = (time.perf_counter() - start) / repeat * 1e6
    return round_trip, per_call_us(store.snapshot, repeat)


def synthetic_metrics(engines: int = 2) -> str:
    """A vLLM-shaped exposition: gauges, counters with ``_created``, 5 bucketed histograms."""
    lines = []
    for engine in range(engines):
        labels = f'engine="{engine}",model_name="smollm2"'
        for gauge in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"):
            lines += [f"# TYPE vllm:{gauge} gauge", f"vllm:{gauge}{{{labels}}} 1.0"]
        for counter in (
            "prompt_tokens",
            "generation_tokens",
            "num_preemptions",
            "prefix_cache_queries",
            "prefix_cache_hits",
            "request_success",
        ):
            lines += [
                f"vllm:{counter}_total{{{labels}}} 123.0",
                f"vllm:{counter}_created{{{labels}}} 1.7e+09",
            ]
        for histogram in (
            "time_to_first_token_seconds",
            "inter_token_latency_seconds",
            "request_time_per_output_token_seconds",
            "e2e_request_latency_seconds",
            "request_queue_time_seconds",
            "request_prompt_tokens",
            "request_generation_tokens",
            "request_prefill_time_seconds",
        ):
            for le in range(30):
                lines.append(f'vllm:{histogram}_bucket{{{labels},le="{le * 0.1:.1f}"}} {le}.0')
            lines += [
                f"vllm:{histogram}_count{{{labels}}} 30.0",
                f"vllm:{histogram}_sum{{{labels}}} 4.5",
            ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=20_000)
    parser.add_argument("--metrics", type=Path, help="a captured /metrics text to parse")
    args = parser.parse_args()

    round_trip, snapshot = asyncio.run(store_costs(args.replicas, args.repeat))
    text = args.metrics.read_text() if args.metrics else synthetic_metrics()
    source = str(args.metrics) if args.metrics else "synthetic, 2 engines"
    parse = per_call_us(lambda: parse_vllm_metrics(text), max(1, args.repeat // 100))
    print(f"begin + finish:                   {round_trip:8.2f} us")
    print(f"snapshot ({args.replicas} replicas):            {snapshot:8.2f} us")
    print(f"parse_vllm_metrics ({len(text.splitlines())} lines, {source}): {parse:8.1f} us")


if __name__ == "__main__":
    main()
