"""llm-d's default scheduler scoring, as a baseline: the Gateway API Inference Extension's EPP
default profile (``config/charts/inferencepool/templates/epp-config.yaml`` in
kubernetes-sigs/gateway-api-inference-extension, profile ``default`` without the latency
predictor: ``queue-scorer`` weight 2, ``kv-cache-utilization-scorer`` weight 2,
``prefix-cache-scorer`` weight 3, highest total score picked over every endpoint of the pool).
The three scorers are re-implemented here from their documented behaviour; the prefix-cache
scorer reads the gateway's prefix index, which, like llm-d's approximate scorer, learns from the
scheduler's own past decisions (its ``lruCapacityPerServer`` default 31,250 blocks).

The queue scorer sees every candidate replica of every variant at once (a ``PoolScorer``), as
llm-d's scorers see every endpoint: the pool is one set of endpoints, whatever variant serves
them. With the ``best-score`` objective the replica with the highest weighted score wins, as
llm-d's ``max-score-picker`` (which breaks exact ties at random; ``best-score`` by variant name).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import Candidate, Prediction, RequestProfile


@dataclass(frozen=True, slots=True)
class LlmdQueueScorer:
    """llm-d's ``queue-scorer``: (most waiting - this replica's waiting) / (most - fewest waiting)
    over the candidates, in [0, 1]; 1 for every candidate when they all wait alike. Inputs:
    vLLM's waiting requests (scraped; unknown counts as none, as llm-d's zero-valued metric)."""

    name: str = "llm-d-queue"
    type: ClassVar[str] = "llm-d-queue"

    def score_pool(self, request: RequestProfile, candidates: Sequence[Candidate]) -> list[float]:
        waiting = [c.state.waiting or 0 for c in candidates]
        low, high = min(waiting, default=0), max(waiting, default=0)
        if high == low:
            return [1.0] * len(candidates)
        return [(high - w) / (high - low) for w in waiting]

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        return 1.0  # alone, a candidate waits as much as the fewest and the most


@dataclass(frozen=True, slots=True)
class LlmdKvCacheUtilizationScorer:
    """llm-d's ``kv-cache-utilization-scorer``: 1 - the replica's KV-cache usage fraction, in
    [0, 1]. Inputs: vLLM's KV-cache usage (scraped; unknown counts as empty)."""

    name: str = "llm-d-kv-cache-utilization"
    type: ClassVar[str] = "llm-d-kv-cache-utilization"

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        return min(1.0, max(0.0, 1.0 - (candidate.state.kv_cache_usage or 0.0)))


@dataclass(frozen=True, slots=True)
class LlmdPrefixCacheScorer:
    """llm-d's ``prefix-cache-scorer``: the prompt's blocks the endpoint is believed to hold, as
    a fraction of all its blocks, in [0, 1] (llm-d: matched blocks / total blocks; here the
    matched tokens ``Candidate.cached_tokens`` / prompt tokens, the same ratio in tokens).
    Inputs: prompt tokens, the prefix index's cached tokens."""

    name: str = "llm-d-prefix-cache"
    type: ClassVar[str] = "llm-d-prefix-cache"

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        if request.input_tokens <= 0:
            return 0.0
        return min(1.0, max(0, candidate.cached_tokens) / request.input_tokens)
