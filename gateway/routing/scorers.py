"""Scorers: rank replicas within a variant. Each returns a value in [0, 1], higher is better."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import Candidate, Prediction, RequestProfile
from gateway.routing.predictors import prefill_ms, replica_load


@dataclass(frozen=True, slots=True)
class LeastLoadedScorer:
    """1 / (1 + sequences on the replica). Inputs: in-flight count, scraped running + waiting."""

    name: str = "least-loaded"
    type: ClassVar[str] = "least-loaded"

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        return 1.0 / (1.0 + replica_load(candidate))


@dataclass(frozen=True, slots=True)
class PredictedLatencyScorer:
    """scale / (scale + predicted end-to-end ms): 0.5 at ``scale_ms``, near 1 when instant."""

    name: str = "predicted-latency"
    type: ClassVar[str] = "predicted-latency"
    scale_ms: float = 1000.0

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        return self.scale_ms / (self.scale_ms + max(0.0, prediction.e2e_ms))


@dataclass(frozen=True, slots=True)
class DecodeSlackScorer:
    """1 when this prompt's prefill fits in the decode slack of the requests in flight on the
    replica (or none has a budget), else slack / prefill in [0, 1): among a variant's replicas,
    the one where the prompt stalls no short answer past its budget. Inputs: prompt tokens (the
    uncached part), the variant's prefill speed, ``decode_slack_ms``."""

    name: str = "decode-slack"
    type: ClassVar[str] = "decode-slack"

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        slack_ms = candidate.state.decode_slack_ms
        cost_ms = prefill_ms(request, candidate.variant, candidate.cached_tokens)
        if slack_ms is None or cost_ms <= slack_ms:
            return 1.0
        return max(0.0, slack_ms) / cost_ms


@dataclass(frozen=True, slots=True)
class LowErrorScorer:
    """1 - recent error rate of the replica."""

    name: str = "low-error"
    type: ClassVar[str] = "low-error"

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        return min(1.0, max(0.0, 1.0 - candidate.state.error_rate))


@dataclass(frozen=True, slots=True)
class ObservedTtftScorer:
    """LiteLLM's latency-based routing, as a baseline: ``scale / (scale + observed EWMA TTFT ms)``;
    a replica not yet observed scores 1 (LiteLLM tries unmeasured deployments first). It looks
    at the past only: no prompt length, no queue, no budget."""

    name: str = "observed-ttft"
    type: ClassVar[str] = "observed-ttft"
    scale_ms: float = 100.0

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
        ttft_s = candidate.state.ttft_s
        if ttft_s is None:
            return 1.0
        return self.scale_ms / (self.scale_ms + ttft_s * 1e3)
