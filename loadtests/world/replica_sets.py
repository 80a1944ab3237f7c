"""The replica sets a benchmark runs against: a model, its variants (a simulator profile each,
a price, how many replicas, the tasks parity allows) and its context length."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.flow import Price


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


# Prices (USD per 1M tokens) are illustrative, in proportion to the GPU time each variant needs per
# token on the same 4x H100, as the datasheet profiles had it (FP8 decoding ~1.5x and prefilling
# ~1.8x faster than bf16). The profiles refitted to published figures put FP8 at ~1.3x (one
# request) to ~1.6x (large batches) in decode and 1.5x in prefill; the prices stay, so that every
# committed result prices requests alike.
REPLICA_SETS: Mapping[str, ReplicaSet] = {
    # The model is named neutrally: LiteLLM fetches a Llama 3 tokenizer from the Hugging Face hub for
    # any model whose name says "llama-3" (no hub here: each request then stalls on its retries).
    "h100-70b": ReplicaSet("h100-70b", "duet-70b", (
        VariantSpec("standard", "full", "h100-70b-bf16", Price(0.60, 1.20)),
        # FP8's verdicts as the H100 deployment states them (deploy/render/h100-70b.yaml, as the demo
        # config): long documents and multi-step reasoning stay on bf16. No FP8 parity report is in
        # the repo; the measured CPU ones (docs/parity-real) refuse long-context on int8 and bnb4 too.
        VariantSpec("fast", "quantized", "h100-70b-fp8", Price(0.35, 0.75),
                    allowed_tasks=("chat", "coding", "agent", "extraction")),
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
