"""Predictors: expected TTFT, time per output token and end-to-end latency on a candidate."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.domain import Candidate, Prediction, RequestProfile


def replica_load(candidate: Candidate) -> int:
    """Sequences on the replica: the larger of the gateway's own in-flight count and vLLM's
    running + waiting (scraped, so possibly a second old, and blind to other gateways' latest)."""
    state = candidate.state
    scraped = (state.running or 0) + (state.waiting or 0)
    return max(state.in_flight, scraped)


@dataclass(frozen=True, slots=True)
class QueueAwareLatencyPredictor:
    """Predicts latency from the variant's speed prior and the replica's load, corrected by what
    the gateway observed.

    - time per output token = decode_s_per_token x (1 + decode_slowdown_per_seq x running sequences),
      blended with the observed EWMA (weight ``observed_weight``) when there is one;
    - TTFT = queueing + prefill (prompt tokens / prefill rate) + one decode step, where queueing
      assumes the waiting requests look like this one and a batch slot frees every
      service time / running sequences; the observed EWMA TTFT only ever raises it, since it was
      measured on other prompts and must not hide this prompt's length;
    - end-to-end = TTFT + (expected output tokens - 1) x time per output token.
    """

    name: str = "queue-aware-latency"
    observed_weight: float = 0.5

    def predict(self, request: RequestProfile, candidate: Candidate) -> Prediction:
        speed = candidate.variant.speed
        state = candidate.state
        running = max(state.in_flight, state.running or 0)
        tpot_s = speed.decode_s_per_token * (1.0 + speed.decode_slowdown_per_seq * running)
        if state.tpot_s is not None:
            tpot_s = (1.0 - self.observed_weight) * tpot_s + self.observed_weight * state.tpot_s
        prefill_s = request.input_tokens / speed.prefill_tokens_per_s
        outputs = max(1, request.expected_output_tokens)
        service_s = prefill_s + outputs * tpot_s
        queue_s = (state.waiting or 0) * service_s / max(1, running)
        ttft_s = queue_s + prefill_s + tpot_s
        if state.ttft_s is not None:
            ttft_s = max(ttft_s, (1.0 - self.observed_weight) * ttft_s + self.observed_weight * state.ttft_s)
        e2e_s = ttft_s + (outputs - 1) * tpot_s
        return Prediction(ttft_ms=ttft_s * 1e3, e2e_ms=e2e_s * 1e3, tpot_ms=tpot_s * 1e3)
