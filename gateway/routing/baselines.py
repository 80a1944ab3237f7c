"""Baseline objectives that Duet's policy is compared with (``duet bench slo``, ``duet replay``):
round-robin across variants, least-loaded (or any score) across variants, and a static split.

Routing is pure and synchronous, so round-robin cannot keep a counter: a rotating index would be
mutable state shared by every request (and, with several gateways, by every process). Instead the
rotation is chosen by a stable hash (CRC-32, the same in every process and run, unlike Python's
salted ``hash``) of the request's own fields. Over a trace of varied requests this splits traffic
evenly across variants, as a counter would on average, while a given request always routes the same
way, so decisions stay replayable and testable with plain data.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import RequestProfile
from gateway.routing.plugin import Option, VariantOrder, expected_cost_usd


def request_hash(request: RequestProfile) -> int:
    """A stable 32-bit hash of the request's task, length and budget fields."""
    key = f"{request.task}|{request.input_tokens}|{request.expected_output_tokens}|{request.max_output_tokens}"
    return zlib.crc32(key.encode())


@dataclass(frozen=True, slots=True)
class RoundRobinObjective:
    """Variants (sorted by name) rotated by ``request_hash % count``: an even split across variants
    in the long run, whatever their speed, cost or load. Inputs: the request's fields only."""

    name: str = "round-robin"
    type: ClassVar[str] = "round-robin"

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        names = sorted(o.candidate.variant.name for o in best)
        shift = request_hash(request) % len(names)
        rotated = tuple(names[shift:] + names[:shift])
        head = next(o for o in best if o.candidate.variant.name == rotated[0])
        return VariantOrder(rotated, "round-robin", request.budget.fits(head.prediction))


@dataclass(frozen=True, slots=True)
class BestScoreObjective:
    """Variants by their best replica's combined score, highest first (ties: by name). With the
    ``least-loaded`` scorer alone this is least-loaded routing across every replica of every
    variant. Inputs: the scores of each variant's best option."""

    name: str = "best-score"
    type: ClassVar[str] = "best-score"

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        ranked = sorted(best, key=lambda o: (-o.score, o.candidate.variant.name))
        variants = tuple(o.candidate.variant.name for o in ranked)
        return VariantOrder(variants, "best-score", request.budget.fits(ranked[0].prediction))


@dataclass(frozen=True, slots=True)
class StaticSplitObjective:
    """A static split: variants by the request's expected price, cheapest first (ties: by name),
    whatever their load or the budget. After the ``task-allowed`` filter each task is pinned to
    its cheapest allowed variant, as an operator's fixed task -> deployment table would. Inputs:
    prompt and expected output tokens, the variants' prices."""

    name: str = "static-split"
    type: ClassVar[str] = "static-split"

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        ranked = sorted(best, key=lambda o: (expected_cost_usd(request, o), o.candidate.variant.name))
        variants = tuple(o.candidate.variant.name for o in ranked)
        return VariantOrder(variants, "static-split", request.budget.fits(ranked[0].prediction))
