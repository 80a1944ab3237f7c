"""Predictors: expected TTFT, time per output token and end-to-end latency on a candidate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import Candidate, Prediction, RequestProfile, Variant
from gateway.routing.roles import chunk_budget, max_batch


def uncached_tokens(request: RequestProfile, candidate: Candidate) -> int:
    """The prompt tokens the replica must prefill: those it is not believed to hold in its prefix
    cache. vLLM always computes a prompt's last token (it needs its logits), so at least one."""
    return max(min(1, request.input_tokens), request.input_tokens - candidate.cached_tokens)


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
    - TTFT = queueing + prefill (uncached prompt tokens / prefill rate) + one decode step, where queueing
      assumes the waiting requests look like this one and a batch slot frees every
      service time / running sequences; the observed EWMA TTFT only ever raises it, since it was
      measured on other prompts and must not hide this prompt's length;
    - end-to-end = TTFT + (expected output tokens - 1) x time per output token.
    """

    name: str = "queue-aware-latency"
    type: ClassVar[str] = "queue-aware-latency"
    observed_weight: float = 0.5

    def predict(self, request: RequestProfile, candidate: Candidate) -> Prediction:
        speed = candidate.variant.speed
        state = candidate.state
        running = max(state.in_flight, state.running or 0)
        tpot_s = speed.decode_s_per_token * (1.0 + speed.decode_slowdown_per_seq * running)
        if state.tpot_s is not None:
            tpot_s = (1.0 - self.observed_weight) * tpot_s + self.observed_weight * state.tpot_s
        prefill_s = uncached_tokens(request, candidate) / speed.prefill_tokens_per_s
        outputs = max(1, request.expected_output_tokens)
        service_s = prefill_s + outputs * tpot_s
        queue_s = (state.waiting or 0) * service_s / max(1, running)
        ttft_s = queue_s + prefill_s + tpot_s
        if state.ttft_s is not None:
            ttft_s = max(ttft_s, (1.0 - self.observed_weight) * ttft_s + self.observed_weight * state.ttft_s)
        e2e_s = ttft_s + (outputs - 1) * tpot_s
        return Prediction(ttft_ms=ttft_s * 1e3, e2e_ms=e2e_s * 1e3, tpot_ms=tpot_s * 1e3)


@dataclass(frozen=True, slots=True)
class StepModelPredictor:
    """Predicts latency by replaying vLLM's scheduler in closed form on the variant's step model
    (see ``SpeedPrior``), then corrects by the replica's learned bias.

    - running sequences B: the larger of the gateway's in-flight count and vLLM's gauge;
      context they attend over: KV usage x KV capacity when both are known;
    - a decode step: base + b x B x (1 + drafts) + c x context (+ draft costs); time per output
      token = that step / the task's tokens per step (speculation: acceptance by task); the
      replica's prompt-token utilisation is reported beside it, not folded in;
    - TTFT = frontend + half a step in flight + queueing + prefill, where prefill is this
      prompt's chunks after the prompts queued ahead (the step's token budget minus the
      decoders' tokens), counting only the part of the prompt not in the replica's prefix cache
      (``Candidate.cached_tokens``), and queueing, when vLLM reports waiting requests and the replica is out
      of batch slots or KV space, lets W requests ahead take slots freed at the rate B sequences
      finish;
    - end-to-end = TTFT + (expected output - 1) x time per output token.
    Inputs: prompt tokens and cached tokens, expected output, task; in-flight, running, waiting, KV usage, prefill
    rate, biases.
    """

    name: str = "step-model"
    type: ClassVar[str] = "step-model"

    def predict(self, request: RequestProfile, candidate: Candidate) -> Prediction:
        speed = candidate.variant.speed
        state = candidate.state
        running = max(state.in_flight, state.running or 0)
        context = _context_tokens(candidate, running, request)
        drafts = speed.draft_tokens
        step_s = (
            speed.decode_s_per_token
            + speed.per_seq_s * running * (1 + drafts)
            + speed.kv_read_s_per_token * context
            + ((speed.draft_s_per_step + speed.draft_s_per_seq * running) if drafts else 0.0)
        )
        # Our own sequence joins the batch once it decodes. Prompts arriving after us stall some
        # of our steps, not all: the typical request misses most of them, so the prediction is
        # the plain step (stretching every step by 1 / (1 - prompt-token utilisation) measured
        # worse under every policy's replay traffic). Their tail is ``prefill_interference_ms``.
        utilisation = _prefill_utilisation(candidate)
        decode_step_s = step_s + speed.per_seq_s * (1 + drafts) + (speed.draft_s_per_seq if drafts else 0.0)
        tpot_s = decode_step_s / speed.tokens_per_step_for(request.task)
        # Prompts queued ahead (vLLM prefills in arrival order) go first, then ours, in chunks of
        # the step's token budget left after the decoders. The gateway knows the tokens it sent;
        # waiting requests it does not know of (another gateway's) are taken to look like ours.
        waiting = state.waiting or 0
        ahead_tokens = state.prefill_backlog_tokens or waiting * request.input_tokens
        prefill_tokens = ahead_tokens + uncached_tokens(request, candidate)
        budget = max(1, int(chunk_budget(candidate) - running * (1 + drafts)))
        chunks = -(-prefill_tokens // budget)
        prefill_s = chunks * step_s + prefill_tokens / speed.prefill_tokens_per_s
        outputs = max(1, request.expected_output_tokens)
        queue_s = 0.0
        if waiting and running and _out_of_slots(candidate, running):
            # No batch slot or KV space: slots free as running sequences finish, each after
            # ~``outputs`` decode steps. Below that, waiting requests only wait for their prefill
            # (counted above), not for a slot.
            queue_s = (waiting + 1) * outputs * decode_step_s / running
        # A prompt arriving at a busy replica waits, on average, for half of the step in flight;
        # an idle replica starts it at once.
        in_flight_step_s = 0.5 * step_s if running else 0.0
        model_ttft_s = speed.frontend_s + in_flight_step_s + queue_s + prefill_s
        ttft_s = model_ttft_s * state.ttft_bias
        model_tpot_s = tpot_s
        tpot_s *= state.tpot_bias
        e2e_s = ttft_s + (outputs - 1) * tpot_s
        return Prediction(
            ttft_ms=ttft_s * 1e3, e2e_ms=e2e_s * 1e3, tpot_ms=tpot_s * 1e3,
            model_ttft_ms=model_ttft_s * 1e3, model_tpot_ms=model_tpot_s * 1e3, utilisation=utilisation,
        )


def prefill_interference_ms(request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float:
    """Expected milliseconds that other prompts' prefill adds to each of ``request``'s output
    tokens on ``candidate`` (>= 0): the TPOT tail a short answer cannot amortise.

    vLLM prefills prompts that arrive while a request waits in the steps right after its first
    token, and every chunk stalls the decode by its prefill time. Expected interfering tokens:
    the prompts queued there now (the freshest sign of a burst, whose later prompts queue behind
    this one) plus the replica's recent prompt-token rate over the request's predicted wait and
    decode; their prefill time is spread over the request's output tokens after the first.
    Inputs: expected output tokens; prefill backlog and rate; predicted TTFT and TPOT; prefill speed.
    """
    state = candidate.state
    steps = max(1, request.expected_output_tokens - 1)
    window_s = (prediction.ttft_ms + steps * prediction.tpot_ms) / 1e3
    tokens = state.prefill_backlog_tokens + (state.prefill_tokens_per_s or 0.0) * window_s
    return tokens / candidate.variant.speed.prefill_tokens_per_s * 1e3 / steps


def prefill_ms(request: RequestProfile, variant: Variant, cached_tokens: int = 0) -> float:
    """Compute time of ``request``'s prompt on a replica of ``variant`` that holds
    ``cached_tokens`` of it: what it stalls the sequences decoding there by."""
    tokens = max(min(1, request.input_tokens), request.input_tokens - cached_tokens)
    return tokens / variant.speed.prefill_tokens_per_s * 1e3


# Beyond this the replica is saturated with prefill; a larger figure (and the objective's margin
# that grows with it) would only reflect scrape noise.
_MAX_PREFILL_UTILISATION = 0.9


def _prefill_utilisation(candidate: Candidate) -> float:
    rate = candidate.state.prefill_tokens_per_s
    if not rate:
        return 0.0
    return min(_MAX_PREFILL_UTILISATION, rate / candidate.variant.speed.prefill_tokens_per_s)


# vLLM stops admitting new sequences into the batch near a full KV cache (it would preempt).
_KV_FULL = 0.95


def _out_of_slots(candidate: Candidate, running: int) -> bool:
    """Whether waiting requests wait for a batch slot (max_num_seqs or KV space) rather than only
    for their prefill."""
    usage = candidate.state.kv_cache_usage
    return running >= max_batch(candidate) or (usage is not None and usage >= _KV_FULL)


def _context_tokens(candidate: Candidate, running: int, request: RequestProfile) -> float:
    """Tokens the running sequences attend over: from KV usage when known, else assume they look
    like this request half-way through."""
    speed, state = candidate.variant.speed, candidate.state
    if state.kv_cache_usage is not None and speed.kv_cache_tokens:
        return state.kv_cache_usage * speed.kv_cache_tokens
    return running * (request.input_tokens + request.expected_output_tokens / 2)
