"""``make bench-router``: how long one routing decision takes (classify not included), for a model
with 16 replicas (8 standard, 8 fast) in varied states, with Duet's default profile.

Prints p50 / p99 / max in microseconds over many decisions; the goal (issue #8) is p99 <= 1 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import yaml

from gateway.flow import Budget, Health, ReplicaState, RequestProfile, View, candidates_for, parse_config, route
from loadtests.policies import REPLICA_SETS, duet_config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicas-per-variant", type=int, default=8)
    parser.add_argument("--decisions", type=int, default=20000)
    parser.add_argument("--policy", default="duet")
    args = parser.parse_args()
    replica_set = REPLICA_SETS["h100-70b"]
    count = args.replicas_per_variant
    urls = {v.name: [f"http://bench.invalid/{v.name}/{i}" for i in range(count)] for v in replica_set.variants}
    config = parse_config(yaml.safe_dump(duet_config(replica_set, urls, args.policy, 1.0)))
    (model,) = config.models.values()
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
    for i in range(args.decisions):
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
    result = {
        "replicas": len(model.replicas), "decisions": args.decisions, "policy": args.policy,
        "p50_us": round(statistics.median(wall), 1), "p99_us": round(wall[p99], 1), "max_us": round(wall[-1], 1),
        # CPU time of the deciding thread: what the decision costs, without the time other processes
        # took the core away (on a shared machine the wall-clock tail is mostly that).
        "cpu_p50_us": round(statistics.median(cpu), 1), "cpu_p99_us": round(cpu[p99], 1),
    }
    print(f"routing decision, {result['replicas']} replicas, policy {args.policy}: wall p50 {result['p50_us']} us, "
          f"p99 {result['p99_us']} us; CPU p50 {result['cpu_p50_us']} us, p99 {result['cpu_p99_us']} us (goal p99 <= 1000 us)")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
