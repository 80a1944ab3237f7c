"""The prefix index's cost per request, for ``make bench-router``: what the gateway adds to a
request's routing to know which replicas hold its prompt (issue #17's goal: under 50 µs at p99
for an 8k-token prompt).

Per request the gateway checks the replicas' start times (``watch``), cuts the prompt into
chained block ids (from the text's bytes without a tokenizer; from token ids with one: the
tokenizer's own time is not counted, it already runs to count the prompt), looks up the longest
cached prefix on every candidate replica, and, once the replica prefilled it, records its blocks
there. ``index_per_request`` is those steps together (the text path). Measured on a full index
(``blocks_per_replica`` ids on each of 16 replicas, as after hours of traffic), with half the
requests continuing a conversation one replica holds, CPU time of this thread per request.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from gateway.flow import (
    ApproxTokenCounter,
    ChatBody,
    Health,
    Inbound,
    InMemoryPrefixIndex,
    ModelSpec,
    ReplicaState,
    View,
    candidates_for,
    parse_body,
    prompt_prefix,
    token_block_ids,
)

PROMPT_TOKENS = 8192
CHARS_PER_TOKEN = 4


def percentiles(samples_us: list[float]) -> dict[str, float]:
    ordered = sorted(samples_us)
    return {"p50_us": round(statistics.median(ordered), 1), "p99_us": round(ordered[int(0.99 * len(ordered))], 1),
            "max_us": round(ordered[-1], 1)}


def cpu_us(action: Callable[[], Any], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        started = time.thread_time_ns()
        action()
        samples.append((time.thread_time_ns() - started) / 1e3)
    return samples


def conversation(rng: random.Random, model: str) -> ChatBody:
    """A chat whose text is about ``PROMPT_TOKENS`` tokens at 4 characters each."""
    words = "the a cache prefix replica token block route standard fast variant session".split()
    turns = []
    for i in range(16):
        text = " ".join(rng.choice(words) for _ in range(PROMPT_TOKENS * CHARS_PER_TOKEN // 16 // 6))
        turns.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    raw = json.dumps({"model": model, "messages": [{"role": "system", "content": "be brief"}, *turns]})
    return parse_body(raw.encode(), ChatBody)[1]


def measure(model: ModelSpec, block_tokens: int, blocks_per_replica: int, repeats: int) -> dict[str, Any]:
    """CPU µs per request of each step, and of the whole text path, at ``block_tokens``."""
    rng = random.Random(17)
    index = InMemoryPrefixIndex(blocks_per_replica)
    for replica in model.replicas:  # a full index: distinct prefixes up to the capacity
        for _ in range(0, blocks_per_replica, 64):
            index.learn(replica.id, tuple(rng.getrandbits(63) for _block in range(64)))
    bodies = [conversation(rng, model.name) for _ in range(8)]
    counter = ApproxTokenCounter()
    prefixes = [prompt_prefix(Inbound(b, {}), counter, block_tokens) for b in bodies]
    for i, prefix in enumerate(prefixes[::2]):  # half the conversations are warm on one replica
        index.learn(model.replicas[i % len(model.replicas)].id, prefix.blocks)
    tokens = [rng.randrange(50_000) for _ in range(PROMPT_TOKENS)]
    snapshot = {r.id: ReplicaState(r.id, health=Health.UP, started_at=1.7e9) for r in model.replicas}
    view = View(snapshot, prefixes=index)
    inbound = [Inbound(b, {}) for b in bodies]
    n = len(bodies)
    counts = iter(range(10**9))

    ids = [r.id for r in model.replicas]

    def look_up(blocks: tuple[int, ...]) -> None:
        for replica_id in ids:  # what candidates_for asks the index, one call per candidate
            index.cached_blocks(replica_id, blocks)

    def whole() -> None:
        i = next(counts) % n
        index.watch(snapshot)
        prefix = prompt_prefix(inbound[i], counter, block_tokens)
        look_up(prefix.blocks)
        index.learn(ids[i % len(ids)], prefix.blocks)

    steps = {
        "hash_text": cpu_us(lambda: prompt_prefix(inbound[next(counts) % n], counter, block_tokens), repeats),
        "hash_token_ids": cpu_us(lambda: token_block_ids(tokens, block_tokens), repeats),
        "watch": cpu_us(lambda: index.watch(snapshot), repeats),
        "lookup_all_replicas": cpu_us(lambda: look_up(prefixes[next(counts) % n].blocks), repeats),
        "learn": cpu_us(lambda: index.learn(ids[0], prefixes[next(counts) % n].blocks), repeats),
        "index_per_request": cpu_us(whole, repeats),
    }
    # Building the candidates with and without the index's answer: the same whole, seen from routing.
    with_index = cpu_us(lambda: candidates_for(model, view, None, prefixes[next(counts) % n]), repeats)
    without = cpu_us(lambda: candidates_for(model, View(snapshot), None, None), repeats)
    return {
        "block_tokens": block_tokens, "prompt_tokens": PROMPT_TOKENS, "blocks": len(prefixes[0].blocks),
        "replicas": len(model.replicas), "blocks_per_replica": blocks_per_replica, "repeats": repeats,
        **{name: percentiles(samples) for name, samples in steps.items()},
        "candidates_with_index": percentiles(with_index), "candidates_without_index": percentiles(without),
    }
