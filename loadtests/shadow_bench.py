"""``make bench-router`` (second part): what online parity's sampling costs a finished request that
is NOT sampled, the bookkeeping every request pays (goal: p99 < 50 us). The request is planned by
the real director on the demo config; the sampling decision runs as the ``done`` hook runs it.

Cases: online parity off; on, the request served by the fast variant with a 5% share for its task
(drawn above the share: not sampled); on, the request served by the standard with no shadow-stage
variant to mirror to. Writes runs/bench/shadow-sampling.json and prints the numbers."""

from __future__ import annotations

import argparse
import json
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
    Outcome,
    PrefillBacklog,
    WaitingRoom,
    parse_config,
    shadow_sample,
)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "deploy" / "config" / "demo.yaml"
SHARE = 0.05


def director_for(online: bool) -> Director:
    raw = yaml.safe_load(DEMO.read_text())
    if online:
        raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": SHARE}}}
    active = ActiveConfig.of(parse_config(yaml.safe_dump(raw)))
    return Director(lambda: active, InMemoryStateStore(), Ledgers(PrefillBacklog(), DecodeLedger()), WaitingRoom(8),
                    Hooks(), time.perf_counter)


def measure(director: Director, variant: str, requests: int) -> dict[str, Any]:
    body = ChatBody.model_validate({"model": "smollm2", "messages": [{"role": "user", "content": "Hello there."}],
                                    "max_tokens": 32})
    outcome = Outcome("r", True, 200, 0.05, 0.4, 12, 32)
    costs, sampled = [], 0
    for i in range(requests):
        exchange = director.open(Inbound(body, {"x-duet-task": "chat"}), f"{i:08x}-bench")
        model = exchange.plan.target.model
        replica = next(r for r in model.replicas if r.variant == variant)
        exchange.attempt = Attempt(replica, model.variants[variant], None)
        started = time.perf_counter_ns()
        picked = shadow_sample(exchange, outcome)
        elapsed = time.perf_counter_ns() - started
        if picked is None:
            costs.append(elapsed / 1e3)
        else:
            sampled += 1
    costs.sort()
    return {"not_sampled": len(costs), "sampled": sampled, "p50_us": round(statistics.median(costs), 2),
            "p99_us": round(costs[int(0.99 * len(costs))], 2), "max_us": round(costs[-1], 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--out", type=Path, default=Path("runs/bench/shadow-sampling.json"))
    args = parser.parse_args()
    cases = {
        "off": measure(director_for(False), "fast", args.requests),
        f"on, served by fast, share {SHARE}": measure(director_for(True), "fast", args.requests),
        "on, served by standard, nothing to mirror": measure(director_for(True), "standard", args.requests),
    }
    for name, result in cases.items():
        print(f"shadow sampling ({name}): not sampled {result['not_sampled']}, sampled {result['sampled']}; "
              f"p50 {result['p50_us']} us, p99 {result['p99_us']} us, max {result['max_us']} us (goal p99 < 50 us)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"goal_p99_us": 50, "cases": cases}, indent=1) + "\n")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
