"""``make bench-router`` and ``make bench-overhead`` (issue #18): what online parity's sampling
costs a request that is NOT sampled, the bookkeeping every request pays (goal: p99 < 50 us).

Per request, as the gateway runs it: the draw at dispatch (``shadow_sample`` for the attempt: a
settings read, a share look-up and, when the share is above 0, a keyed hash of the request id)
and, at ``done``, the look at the attempt's tap (None: nothing was kept, no check starts). A
request that is not drawn has no tap, so its answer passes to the client untouched. The request
is planned by the real director on the demo config (planning is not timed).

Cases: online parity off; on, served by the fast variant with a 5% share for its task (drawn
above the share: not sampled); on, served by the standard with no shadow-stage variant to mirror
to. Prints the numbers and writes ``--out`` (default docs/results/shadow-sampling.json, with the
hardware class, the load average and the date), which ``python -m loadtests.sections`` renders
into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import yaml

from gateway.flow import (
    ActiveConfig,
    Attempt,
    ChatBody,
    DecodeLedger,
    Director,
    Hooks,
    Inbound,
    InMemoryStateStore,
    Ledgers,
    PrefillBacklog,
    WaitingRoom,
    parse_config,
)
from gateway.parity import shadow_sample
from serving.hardware import this_machine

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "deploy" / "config" / "demo.yaml"
RESULTS = ROOT / "docs" / "results" / "shadow-sampling.json"
SHARE = 0.05
GOAL_P99_US = 50


def director_for(online: bool) -> Director:
    raw = yaml.safe_load(DEMO.read_text())
    if online:
        raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": SHARE}}}
    active = ActiveConfig.of(parse_config(yaml.safe_dump(raw)))
    return Director(lambda: active, InMemoryStateStore(), Ledgers(PrefillBacklog(), DecodeLedger()), WaitingRoom(8),
                    Hooks(), time.perf_counter)


def measure(director: Director, variant: str, requests: int) -> dict[str, Any]:
    """Wall and thread-CPU time of the draw and the tap check, per request that was not drawn."""
    body = ChatBody.model_validate({"model": "smollm2", "messages": [{"role": "user", "content": "Hello there."}],
                                    "max_tokens": 32})
    wall, cpu, sampled = [], [], 0
    for i in range(requests):
        exchange = director.open(Inbound(body, {"x-duet-task": "chat"}), f"{i:08x}-bench")
        model = exchange.plan.target.model
        replica = next(r for r in model.replicas if r.variant == variant)
        attempt = exchange.attempt = Attempt(replica, model.variants[variant], None)
        # The CPU clock (a system call) is read outside the wall clock's span.
        started_cpu = time.thread_time_ns()
        started = time.perf_counter_ns()
        picked = shadow_sample(exchange, attempt)  # at dispatch
        kept = attempt.tap is not None  # at done
        elapsed = time.perf_counter_ns() - started
        elapsed_cpu = time.thread_time_ns() - started_cpu
        if picked is None and not kept:
            wall.append(elapsed / 1e3)
            cpu.append(elapsed_cpu / 1e3)
        else:
            sampled += 1
    wall.sort()
    cpu.sort()
    p99 = int(0.99 * len(wall))
    return {"not_sampled": len(wall), "sampled": sampled, "p50_us": round(statistics.median(wall), 2),
            "p99_us": round(wall[p99], 2), "max_us": round(wall[-1], 2),
            "cpu_p50_us": round(statistics.median(cpu), 2), "cpu_p99_us": round(cpu[p99], 2)}


def docs_section(result: dict[str, Any]) -> str:
    """The markdown of the section, from a result file's contents only."""
    lines = [
        f"Measured {result['date']} with `{result['command']}` on {result['hardware_class']}, {result['cpus']} CPUs "
        f"(1-min load average {result['load_avg'][0]:.2f} at start, {result['load_avg'][1]:.2f} at end), "
        f"{result['requests']:,} requests per case: the draw at dispatch and the tap check at the end of each "
        "request that was not drawn (`loadtests/benchmarks/router/shadow.py`). Wall time, and the measuring thread's CPU "
        "time, in µs.",
        "",
        "| case | not sampled | sampled | p50 | p99 | max | CPU p50 | CPU p99 | goal p99 < "
        f"{result['goal_p99_us']} |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, case in result["cases"].items():
        met = "met" if case["p99_us"] < result["goal_p99_us"] else "not met"
        lines.append(f"| {name} | {case['not_sampled']:,} | {case['sampled']:,} | {case['p50_us']} | {case['p99_us']} "
                     f"| {case['max_us']} | {case['cpu_p50_us']} | {case['cpu_p99_us']} | {met} |")
    lines += ["", "A request that is not drawn keeps no byte of its answer: only a drawn one's writes go through "
              "a tap (docs/parity.md)."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--command-label", default="make bench-router", help="the command the docs name")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    cases = {
        "off": measure(director_for(False), "fast", args.requests),
        f"on, served by fast, share {SHARE}": measure(director_for(True), "fast", args.requests),
        "on, served by standard, nothing to mirror": measure(director_for(True), "standard", args.requests),
    }
    for name, case in cases.items():
        print(f"shadow sampling ({name}): not sampled {case['not_sampled']}, sampled {case['sampled']}; "
              f"p50 {case['p50_us']} us, p99 {case['p99_us']} us, max {case['max_us']} us; CPU p99 "
              f"{case['cpu_p99_us']} us (goal p99 < {GOAL_P99_US} us)")
    result = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "command": args.command_label,
        "hardware_class": this_machine().hardware_class, "cpus": os.cpu_count(),
        "load_avg": [load_start, os.getloadavg()[0]], "requests": args.requests, "goal_p99_us": GOAL_P99_US,
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written: {args.out} (`python -m loadtests.sections` renders the docs from it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
