"""vLLM production-stack's prefix-aware router, as a baseline: ``--routing-logic prefixaware`` of
its ``vllm_router`` (``PrefixAwareRouter`` in src/vllm_router/routers/routing_logic.py of
vllm-project/production-stack). It cuts each prompt into chunks, looks them up in a trie of the
chunks it has sent to each endpoint, keeps the endpoints that hold the longest matched prefix
and picks one of them at random; with nothing matched, any endpoint at random. Its default
``--prefix-min-match-length`` (0) never falls back to its QPS routing, and it reads no engine
statistics: no queue, no KV-cache usage, no budget.

Re-implemented from that behaviour over Duet's prefix index, which learns from the gateway's own
dispatches as the router's trie does (cut in the index's blocks rather than its 128-character
chunks; the policy file sizes the index so that, like the trie, it never evicts). Routing is
pure, so "at random" is a stable hash of the request's fields and the replica id, as the
round-robin baseline's rotation (``gateway.routing.baselines``): uniform over the tied endpoints
across a trace, and the same for one request in a dry run, a replay and the gateway.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import Candidate, Prediction, RequestProfile
from gateway.routing.baselines import request_hash


def coin(request_key: int, replica_id: str) -> float:
    """A number in [0, 1) fixed by the request (``request_hash``) and the replica: its random pick."""
    # blake2b, not CRC-32: a CRC is linear, and its values for one request over "…/0", "…/1", …
    # are correlated enough to favour one replica in four by half again.
    digest = hashlib.blake2b(f"{request_key}|{replica_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(frozen=True, slots=True)
class ProductionStackPrefixScorer:
    """In [0.5, 1) for the candidates holding the longest cached prefix of the prompt (every
    candidate when none holds any), ordered among themselves at random; 0 for the others. With
    the ``best-score`` objective the highest wins: a uniform pick among the longest matches.
    Inputs: the prefix index's cached tokens per candidate, the request's fields (for the pick)."""

    name: str = "production-stack-prefix"
    type: ClassVar[str] = "production-stack-prefix"

    def score_pool(self, request: RequestProfile, candidates: Sequence[Candidate]) -> list[float]:
        longest = max((c.cached_tokens for c in candidates), default=0)
        key = request_hash(request)  # once per request, not per candidate
        return [(1.0 + coin(key, c.replica.id)) / 2 if c.cached_tokens == longest else 0.0 for c in candidates]

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        return (1.0 + coin(request_hash(request), candidate.replica.id)) / 2  # alone, it holds the longest match
