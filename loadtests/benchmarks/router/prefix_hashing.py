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

The tokenizer path runs the gateway's own ``HfTokenCounter`` on a tokenizer.json built here that
cuts text every 4 characters (the text path's ratio, so both hash ~8k tokens; a model's BPE
tokenizer would cost the same here, since the ids of each text are remembered once counted):
``hash_tokenizer_ids`` is the prompt's blocks from the counter's remembered ids, and
``index_per_request_tokenizer`` the steps together on that path. ``hash_token_ids`` is a list of
8,192 ids given as such (a completions prompt of token ids).
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokenizers import Regex, Tokenizer, pre_tokenizers
from tokenizers.models import WordLevel

from gateway.flow import (
    ApproxTokenCounter,
    ChatBody,
    Health,
    HfTokenCounter,
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


def four_char_tokenizer(directory: Path) -> HfTokenCounter:
    """The gateway's tokenizer counter on a tokenizer.json that makes a token of every 4
    characters (all of them one unknown-word id: the hash's cost does not depend on the values)."""
    tokenizer = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]{1,4}"), behavior="isolated")
    path = directory / "tokenizer.json"
    tokenizer.save(str(path))
    return HfTokenCounter(str(path))


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

    def whole(counter: Any = counter) -> None:
        i = next(counts) % n
        index.watch(snapshot)
        prefix = prompt_prefix(inbound[i], counter, block_tokens)
        look_up(prefix.blocks)
        index.learn(ids[i % len(ids)], prefix.blocks)

    with tempfile.TemporaryDirectory() as directory:
        tokenizer = four_char_tokenizer(Path(directory))
    for item in inbound:  # counted once already, as the gateway counts every prompt before routing
        prompt_prefix(item, tokenizer, block_tokens)

    steps = {
        "hash_text": cpu_us(lambda: prompt_prefix(inbound[next(counts) % n], counter, block_tokens), repeats),
        "hash_token_ids": cpu_us(lambda: token_block_ids(tokens, block_tokens), repeats),
        "hash_tokenizer_ids": cpu_us(lambda: prompt_prefix(inbound[next(counts) % n], tokenizer, block_tokens), repeats),
        "watch": cpu_us(lambda: index.watch(snapshot), repeats),
        "lookup_all_replicas": cpu_us(lambda: look_up(prefixes[next(counts) % n].blocks), repeats),
        "learn": cpu_us(lambda: index.learn(ids[0], prefixes[next(counts) % n].blocks), repeats),
        "index_per_request": cpu_us(whole, repeats),
        "index_per_request_tokenizer": cpu_us(lambda: whole(tokenizer), repeats),
    }
    # Building the candidates with and without the index's answer: the same whole, seen from routing.
    with_index = cpu_us(lambda: candidates_for(model, view, None, prefixes[next(counts) % n]), repeats)
    without = cpu_us(lambda: candidates_for(model, View(snapshot), None, None), repeats)
    return {
        "block_tokens": block_tokens, "prompt_tokens": PROMPT_TOKENS, "blocks": len(prefixes[0].blocks),
        "tokenizer_blocks": len(prompt_prefix(inbound[0], tokenizer, block_tokens).blocks),
        "replicas": len(model.replicas), "blocks_per_replica": blocks_per_replica, "repeats": repeats,
        **{name: percentiles(samples) for name, samples in steps.items()},
        "candidates_with_index": percentiles(with_index), "candidates_without_index": percentiles(without),
    }
