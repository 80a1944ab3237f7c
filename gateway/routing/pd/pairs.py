"""Which prefill and decode replicas may serve a request together, best first.

A decode replica, or a replica of role ``both`` with a KV connector (vLLM's ``kv_both``: llm-d's
decode pods, which also serve whole the requests its decider does not split), may take KV from a
prefill replica through the same KV connector, of its own
variant or of the variant whose weights it verifies with (``Variant.shares_weights_with``: a
speculative variant decoding the standard model's KV). Prefill replicas are ordered by predicted
TTFT (their queue and the prompt's uncached part), decode replicas by predicted TPOT; the k-th
decode replica is paired with the k-th compatible prefill replica in turn, so the next pair a
failed one falls back to differs in both halves where the fleet allows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.domain import Candidate, EngineRole, Prediction, RequestProfile
from gateway.routing.plugin import Option, Predictor
from gateway.routing.roles import ENGINE_ROLE, role_of
from gateway.routing.router import RoutingProfile


@dataclass(frozen=True, slots=True)
class Pair:
    """A prefill replica and the decode replica that answers from its KV, with predictions."""

    prefill: Option
    decode: Option


def pair_prediction(request: RequestProfile, pair: Pair) -> Prediction:
    """The request's latency split over ``pair``: first token after the prefill replica's
    predicted TTFT and one decode step (the handoff: the decode replica computes the prompt's
    last token once the KV landed), then the decode replica's TPOT for the rest."""
    tpot = pair.decode.prediction.tpot_ms
    ttft = pair.prefill.prediction.ttft_ms + tpot
    return Prediction(ttft_ms=ttft, e2e_ms=ttft + max(0, request.expected_output_tokens - 1) * tpot, tpot_ms=tpot)


def may_decode_from(decode: Candidate, prefill: Candidate) -> bool:
    """Whether ``decode`` can answer from KV ``prefill`` computed: same connector, and the same
    weights (its own variant, or the one it declares it verifies with)."""
    connector = decode.replica.engine.kv_connector
    if connector is None or connector != prefill.replica.engine.kv_connector:
        return False
    variant = decode.variant
    return prefill.variant.name in (variant.name, variant.shares_weights_with)


def decodes_transferred_kv(candidate: Candidate) -> bool:
    """Whether the replica can answer from KV another computed: decode-only, or ``both`` with a
    connector (it serves whole requests too)."""
    role = role_of(candidate)
    return role is EngineRole.DECODE or (role is EngineRole.BOTH and candidate.replica.engine.kv_connector is not None)


def eligible(request: RequestProfile, candidates: Sequence[Candidate], profile: RoutingProfile,
             role: EngineRole) -> list[Candidate]:
    """The candidates that prefill (``role`` PREFILL) or decode transferred KV (DECODE) and pass
    every filter of ``profile`` but the engine-role one (which keeps clients off prefill- and
    decode-only replicas when a request is served whole)."""
    filters = [f for f in profile.filters if f.type != ENGINE_ROLE]
    fits = (lambda c: role_of(c) is EngineRole.PREFILL) if role is EngineRole.PREFILL else decodes_transferred_kv
    return [c for c in candidates if fits(c) and all(f.keep(request, c)[0] for f in filters)]


def pairs_for(request: RequestProfile, candidates: Sequence[Candidate], profile: RoutingProfile,
              variant: str | None) -> tuple[Pair, ...]:
    """The pairs that may serve ``request``, best first: decode replicas of ``variant`` (None:
    of any variant), each with a compatible prefill replica. Empty when the fleet has none."""
    decodes = [c for c in eligible(request, candidates, profile, EngineRole.DECODE)
               if variant is None or c.variant.name == variant]
    if not decodes:
        return ()
    prefills = _ranked(request, eligible(request, candidates, profile, EngineRole.PREFILL), profile.predictor,
                       lambda o: o.prediction.ttft_ms)
    pairs = []
    for k, decode in enumerate(_ranked(request, decodes, profile.predictor, lambda o: o.prediction.tpot_ms)):
        compatible = [p for p in prefills if may_decode_from(decode.candidate, p.candidate)]
        if compatible:
            pairs.append(Pair(compatible[k % len(compatible)], decode))
    return tuple(pairs)


def _ranked(request: RequestProfile, candidates: Sequence[Candidate], predictor: Predictor,
            key: Callable[[Option], float]) -> list[Option]:
    options = [Option(c, predictor.predict(request, c), 0.0) for c in candidates]
    return sorted(options, key=key)
