"""The replica sets a benchmark runs against: a model, its variants (a simulator profile each,
a price, how many replicas, the tasks parity allows) and its context length."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.fleet.world.pricing import replica_cost, variant_pricing
from gateway.flow import Price, ReplicaCost
from serving.sim.parallel import load_profile
from serving.sim.profile import Profile


@dataclass(frozen=True, slots=True)
class VariantSpec:
    """One variant of a replica set: its simulator profile, price and the replicas to start."""

    name: str
    kind: str
    profile: str
    price: Price
    replicas: int = 1
    sim_args: tuple[str, ...] = ()
    # The task types parity allows on this variant (None: all); every policy's config carries
    # them, and every policy is scored by them (a request served elsewhere is a quality miss).
    allowed_tasks: tuple[str, ...] | None = None
    # What one replica costs per hour, busy or idle (None: a test set with no GPUs to pay for).
    cost: ReplicaCost | None = None
    # Its replicas' chunk budget (vLLM's --max-num-batched-tokens; None: the profile's).
    max_num_batched_tokens: int | None = None

    def sim_profile(self) -> Profile:
        """The simulator profile its replicas run, with the variant's chunk budget."""
        return load_profile(self.profile).with_engine(max_num_batched_tokens=self.max_num_batched_tokens)


def priced(name: str, kind: str, profile: str, allowed_tasks: tuple[str, ...] | None = None) -> VariantSpec:
    """A variant on GPUs: its replica cost from its launch profile, its per-token chargeback
    derived from that cost and its simulator profile (``gateway.fleet.world.pricing``)."""
    price, cost = variant_pricing(profile)
    return VariantSpec(name, kind, profile, price, allowed_tasks=allowed_tasks, cost=cost)


@dataclass(frozen=True, slots=True)
class ReplicaSet:
    """The model and its variants a benchmark runs against."""

    name: str
    model: str
    variants: tuple[VariantSpec, ...]
    max_context: int

    def served_name(self, variant: str) -> str:
        return f"{self.model}-{variant}"

    @property
    def parity(self) -> dict[str, frozenset[str] | None]:
        """variant -> the task types parity allows on it (None: all): what every policy is scored by."""
        return {v.name: None if v.allowed_tasks is None else frozenset(v.allowed_tasks) for v in self.variants}

    def fleet_usd(self, counts: Mapping[str, int], seconds: float) -> float | None:
        """What ``counts`` replicas per variant cost for ``seconds``, busy or idle (None when a
        variant has no replica cost)."""
        costs = {v.name: v.cost for v in self.variants}
        total = 0.0
        for name, n in counts.items():
            if not n:
                continue
            if (cost := costs[name]) is None:
                return None
            total += cost.fleet_usd(n, seconds)
        return total


# Parity of the quantized fast variants, as the H100 deployment states FP8's
# (deploy/render/h100-70b.yaml, as the demo config): long documents and multi-step reasoning stay on
# the standard variant. No FP8 or W4A16 parity report is in the repo; the measured CPU ones
# (docs/parity-real) refuse long-context on int8 and bnb4 too. Speculative decoding verifies every
# draft with the target model: lossless against its own weights, so parity allows every task.
QUANTIZED_PARITY = ("chat", "coding", "agent", "extraction")

# Every H100 replica costs the same per hour (``pricing``). The h100-70b per-token chargeback is the
# list it had before GPU-hour pricing (USD per 1M tokens, in proportion to each variant's GPU time
# per token under the datasheet profiles), kept so that the committed replays of that set price
# requests alike; the other sets derive theirs from the replica cost (``priced``).
REPLICA_SETS: Mapping[str, ReplicaSet] = {
    # The model is named neutrally: LiteLLM fetches a Llama 3 tokenizer from the Hugging Face hub for
    # any model whose name says "llama-3" (no hub here: each request then stalls on its retries).
    "h100-70b": ReplicaSet("h100-70b", "duet-70b", (
        VariantSpec("standard", "full", "h100-70b-bf16", Price(0.60, 1.20), cost=replica_cost("h100-70b-bf16")),
        VariantSpec("fast", "quantized", "h100-70b-fp8", Price(0.35, 0.75), allowed_tasks=QUANTIZED_PARITY,
                    cost=replica_cost("h100-70b-fp8")),
    ), max_context=32768),
    # The pairings that trade off (issue #26): each fast variant wins somewhere and loses elsewhere.
    # W4A16 (Marlin): faster than bf16 for one request, slower in large decode batches.
    "h100-70b-w4a16": ReplicaSet("h100-70b-w4a16", "duet-70b", (
        priced("standard", "full", "h100-70b-bf16"),
        priced("fast", "quantized", "h100-70b-w4a16", QUANTIZED_PARITY),
    ), max_context=32768),
    # EAGLE-3 on the bf16 weights: its gain depends on the task's acceptance and shrinks with batch.
    "h100-70b-eagle3": ReplicaSet("h100-70b-eagle3", "duet-70b", (
        priced("standard", "full", "h100-70b-bf16"),
        priced("fast", "speculative", "h100-70b-eagle3"),
    ), max_context=32768),
    # N-gram speculation on the bf16 weights: its gain depends on how much of the answer repeats the
    # prompt (code edits, extraction), and it may decode KV the standard replicas prefilled.
    "h100-70b-ngram": ReplicaSet("h100-70b-ngram", "duet-70b", (
        priced("standard", "full", "h100-70b-bf16"),
        priced("fast", "speculative", "h100-70b-ngram"),
    ), max_context=32768),
    # FP8 as the standard deployment, n-gram speculation on the same FP8 weights as the fast one.
    "h100-70b-fp8-ngram": ReplicaSet("h100-70b-fp8-ngram", "duet-70b", (
        priced("standard", "quantized", "h100-70b-fp8"),
        priced("fast", "speculative", "h100-70b-fp8-ngram"),
    ), max_context=32768),
    # For tests: two instant replicas, the standard one made 3x slower so policies differ.
    "smoke": ReplicaSet("smoke", "sim", (
        VariantSpec("standard", "full", "fast-test", Price(0.60, 1.20), sim_args=("--slowdown", "3")),
        VariantSpec("fast", "quantized", "fast-test", Price(0.35, 0.75)),
    ), max_context=4096),
}


def variant_map(replica_set: ReplicaSet, urls: Mapping[str, list[str]]) -> dict[str, str]:
    """Served model names and replica API bases -> variant (for gateways that do not say)."""
    mapping = {replica_set.served_name(v.name): v.name for v in replica_set.variants}
    mapping.update({f"{url}/v1": variant for variant, variant_urls in urls.items() for url in variant_urls})
    return mapping


def prices(replica_set: ReplicaSet) -> dict[str, Price]:
    return {v.name: v.price for v in replica_set.variants}
