"""Prefix affinity: among a variant's replicas, prefer the one that already holds the prompt.

The latency predictors already count only the uncached part of a prompt, so the objective weighs
a warm replica's head start against the variants' speed and price; this scorer is the
tie-breaker within a variant that keeps a conversation's turns together even when every replica
would meet the budget (a replica that holds the prefix keeps it warm for the next turn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import Candidate, Prediction, RequestProfile


@dataclass(frozen=True, slots=True)
class PrefixAffinityScorer:
    """The fraction of the prompt the replica is believed to hold, in [0, 1]; 0 when it holds
    fewer than ``min_tokens`` (a shared system prompt alone should not pull every request to one
    replica). Inputs: prompt tokens, ``Candidate.cached_tokens`` (the gateway's prefix index)."""

    name: str = "prefix-affinity"
    type: ClassVar[str] = "prefix-affinity"
    min_tokens: int = 0

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        cached = candidate.cached_tokens
        if cached <= 0 or cached < self.min_tokens or request.input_tokens <= 0:
            return 0.0
        return min(1.0, cached / request.input_tokens)
