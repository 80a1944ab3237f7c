"""What planning one chat request costs: ``plan_request`` whole (the token count, the task, the
prefix blocks, the candidates and the decision) for a chat request of a system prompt and
``--turns`` turns of ~60 words (one in content parts), on the bench config (``duet`` policy, 16
replicas, the approximate token counter) with a prefix index, as the gateway plans a request at
arrival: a new Inbound each time (its task not yet detected, its prompt not yet counted).

    python -m loadtests.benchmarks.router.plan [--turns 8] [--repeats 20000]

Prints p50 / p99 CPU µs of this thread per plan; writes nothing (a measurement quoted in a
change's description, not a section of the docs).
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

import yaml

from gateway.fleet.world.policies import duet_config
from gateway.fleet.world.replica_sets import REPLICA_SETS
from gateway.flow import (
    ActiveConfig,
    ChatBody,
    Health,
    Inbound,
    InMemoryPrefixIndex,
    ReplicaState,
    View,
    parse_body,
    parse_config,
    plan_request,
)
from loadtests.benchmarks.router.prefix_hashing import cpu_us, percentiles

WORDS = "the a cache prefix replica token block route standard fast variant session explain why how".split()


def chat(rng: random.Random, model: str, turns: int) -> bytes:
    """A chat request's body: a system prompt, ``turns`` turns of 60 words, a user's question."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant. Be brief."}]
    for i in range(turns):
        text = " ".join(rng.choice(WORDS) for _ in range(60))
        content: Any = [{"type": "text", "text": text}] if i == 2 else text
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": content})
    messages.append({"role": "user", "content": "Why does the " + " ".join(rng.choice(WORDS) for _ in range(20)) + "?"})
    return json.dumps({"model": model, "messages": messages, "max_tokens": 256}).encode()


def measure(turns: int, repeats: int) -> dict[str, float]:
    """CPU µs per ``plan_request`` of a new chat request."""
    replica_set = REPLICA_SETS["h100-70b"]
    urls = {v.name: [f"http://bench.invalid/{v.name}/{i}" for i in range(8)] for v in replica_set.variants}
    config = parse_config(yaml.safe_dump(duet_config(replica_set, urls, "duet", 1.0)))
    active = ActiveConfig.of(config)
    (model,) = config.models.values()
    rng = random.Random(11)
    bodies = [parse_body(chat(rng, model.name, turns), ChatBody)[1] for _ in range(16)]
    snapshot = {r.id: ReplicaState(r.id, health=Health.UP, in_flight=rng.randint(0, 16), started_at=1.7e9)
                for r in model.replicas}
    view = View(snapshot, prefixes=InMemoryPrefixIndex(100_000))
    counts = iter(range(10**9))

    def plan() -> None:
        plan_request(active, Inbound(bodies[next(counts) % len(bodies)], {}), view)

    for _ in range(500):  # warm
        plan()
    return percentiles(cpu_us(plan, repeats))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20_000)
    args = parser.parse_args()
    result = measure(args.turns, args.repeats)
    print(f"plan_request, chat of {args.turns + 2} messages: CPU p50 {result['p50_us']} us, p99 {result['p99_us']} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
