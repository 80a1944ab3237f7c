"""``make bench-router``: how long one routing decision takes (classify not included), for a model
with 16 replicas (8 standard, 8 fast) in varied states, with Duet's default profile; and what the
prefix index adds per request for an 8k-token prompt (``loadtests.benchmarks.router.prefix_hashing``).

Prints p50 / p99 / max in microseconds; the goals are p99 <= 1 ms per decision (issue #8) and
under 50 µs at p99 for the index on an 8k-token prompt (issue #17). Writes the numbers to
``--out`` (default docs/results/router-bench.json), from which ``python -m loadtests.sections``
renders the "Routing cost" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import yaml

from gateway.fleet.world.policies import duet_config
from gateway.fleet.world.replica_sets import REPLICA_SETS
from gateway.flow import Budget, Health, ReplicaState, RequestProfile, View, candidates_for, parse_config, route
from loadtests.benchmarks.router import prefix_hashing as prefix_bench
from serving.hardware import this_machine

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "docs" / "results" / "router-bench.json"
BLOCK_SIZES = (64, 128, 256)


def decisions(model: Any, config: Any, count: int, policy: str) -> dict[str, Any]:
    rng = random.Random(7)
    snapshots = [
        {r.id: ReplicaState(r.id, health=Health.UP, in_flight=rng.randint(0, 64), running=rng.randint(0, 64),
                            waiting=rng.choice([0, 0, 0, 3]), kv_cache_usage=rng.random(),
                            prefill_tokens_per_s=rng.uniform(0, 8000),
                            ttft_s=rng.uniform(0.05, 0.5), tpot_s=rng.uniform(0.01, 0.05)) for r in model.replicas}
        for _ in range(64)
    ]
    tasks = list(config.policy.tasks)
    requests = [
        RequestProfile(model.name, rng.choice(tasks), "bench", rng.randint(50, 8000), None, rng.randint(8, 500),
                       budget=Budget(ttft_ms=1000.0, latency_ms=20000.0))
        for _ in range(256)
    ]
    wall, cpu = [], []
    for i in range(count):
        request = requests[i % len(requests)]
        candidates = candidates_for(model, View(snapshots[i % len(snapshots)]))
        profile = config.policy.profile_for(request.task)
        started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
        route(request, candidates, profile)
        cpu.append((time.thread_time_ns() - started_cpu) / 1e3)
        wall.append((time.perf_counter_ns() - started) / 1e3)
    wall.sort()
    cpu.sort()
    p99 = int(0.99 * len(wall))
    return {
        "replicas": len(model.replicas), "decisions": count, "policy": policy,
        "p50_us": round(statistics.median(wall), 1), "p99_us": round(wall[p99], 1), "max_us": round(wall[-1], 1),
        # CPU time of the deciding thread: what the decision costs, without the time other processes
        # took the core away (on a shared machine the wall-clock tail is mostly that).
        "cpu_p50_us": round(statistics.median(cpu), 1), "cpu_p99_us": round(cpu[p99], 1),
    }


def docs_section(result: dict[str, Any]) -> str:
    """The markdown of the section, from a result file's contents only."""
    decision = result["decision"]
    lines = [
        f"Measured {result['date']} with `{result['command']}` on "
        f"{result.get('hardware_class', 'an unrecorded hardware class')}, "
        f"{result['cpus']} CPUs (1-min load average "
        f"{result['load_avg'][0]:.2f} at start, {result['load_avg'][1]:.2f} at end). CPU time of the measuring "
        "thread, in µs.",
        "",
        f"Routing decision ({decision['replicas']} replicas, policy {decision['policy']}, {decision['decisions']:,} "
        f"decisions): p50 {decision['cpu_p50_us']}, p99 {decision['cpu_p99_us']} (goal p99 ≤ 1000).",
        "",
        "Prefix index per request, 8,192-token chat prompt, full index (31,250 blocks on each of 16 replicas): "
        "the start-time check, hashing the prompt's text, the look-up on every replica and learning its blocks "
        "at the first token, each measured alone and then together (`loadtests/benchmarks/router/prefix_hashing.py`; goal: "
        "together, p99 < 50). With a tokenizer configured the prompt's token ids are hashed instead of its text: "
        "from the counter's remembered ids (the gateway's `HfTokenCounter`), or from a list of ids given as the "
        "prompt. Block ids are 63-bit.",
        "",
        "| block tokens | blocks | start times | hash text | hash token ids (tokenizer) | hash token ids (list) "
        "| look-up, 16 replicas | learn | together (text) | together (tokenizer) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result["prefix_index"]:
        steps = ("watch", "hash_text", "hash_tokenizer_ids", "hash_token_ids", "lookup_all_replicas", "learn",
                 "index_per_request", "index_per_request_tokenizer")
        cells = [_pair(row[k]) if k in row else "not measured" for k in steps]
        lines.append(f"| {row['block_tokens']} | {row['blocks']} | {' | '.join(cells)} |")
    lines.append("")
    lines.append("Each cell: p50 / p99. `make bench-overhead` runs the gateway whole, so its overhead figures "
                 "include the index (on its short prompts: one or two blocks).")
    return "\n".join(lines)


def _pair(stats: dict[str, float]) -> str:
    """p50 / p99 of one step."""
    return f"{stats['p50_us']} / {stats['p99_us']}"


def index_row(model: Any, block_tokens: int, repeats: int) -> dict[str, Any]:
    """One block size's costs (``loadtests.benchmarks.router.prefix_hashing``)."""
    return prefix_bench.measure(model, block_tokens, 31_250, repeats)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicas-per-variant", type=int, default=8)
    parser.add_argument("--decisions", type=int, default=20000)
    parser.add_argument("--index-repeats", type=int, default=5000)
    parser.add_argument("--policy", default="duet")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    replica_set = REPLICA_SETS["h100-70b"]
    count = args.replicas_per_variant
    urls = {v.name: [f"http://bench.invalid/{v.name}/{i}" for i in range(count)] for v in replica_set.variants}
    config = parse_config(yaml.safe_dump(duet_config(replica_set, urls, args.policy, 1.0)))
    (model,) = config.models.values()
    load_start = os.getloadavg()[0]
    decision = decisions(model, config, args.decisions, args.policy)
    print(f"routing decision, {decision['replicas']} replicas, policy {args.policy}: wall p50 {decision['p50_us']} us, "
          f"p99 {decision['p99_us']} us; CPU p50 {decision['cpu_p50_us']} us, p99 {decision['cpu_p99_us']} us "
          "(goal p99 <= 1000 us)")
    rows = [index_row(model, block_tokens, args.index_repeats) for block_tokens in BLOCK_SIZES]
    for row in rows:
        print(f"prefix index, 8k-token prompt, {row['block_tokens']}-token blocks: CPU p50 "
              f"{row['index_per_request']['p50_us']} us, p99 {row['index_per_request']['p99_us']} us (goal p99 < 50 us); "
              f"with a tokenizer p50 {row['index_per_request_tokenizer']['p50_us']} us, "
              f"p99 {row['index_per_request_tokenizer']['p99_us']} us")
    result = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "make bench-router", "hardware_class": this_machine().hardware_class, "cpus": os.cpu_count(),
        "load_avg": [load_start, os.getloadavg()[0]],
        "decision": decision, "prefix_index": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
