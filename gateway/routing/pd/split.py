"""A routing decision with disaggregated prefill: where the model's fleet has prefill and decode
replicas, the rule decides whether the request is split; a split decision ranks the pairs'
decode replicas first (each with its prefill replica in ``Decision.prefill_for``), then the
co-located replicas the router ranked, so a failed pair falls back to the next pair and then
to a replica that serves the request whole, through the director's one retry loop."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gateway.decision import Decision
from gateway.domain import Candidate, EngineRole, RequestProfile
from gateway.routing.pd.pairs import Pair, decodes_transferred_kv, pair_prediction, pairs_for
from gateway.routing.pd.rules import SplitRule
from gateway.routing.plugin import Option
from gateway.routing.roles import role_of
from gateway.routing.router import RoutingProfile


def has_pairs(candidates: Sequence[Candidate]) -> bool:
    """Whether some candidate prefills for others and some decodes transferred KV (the only case a
    request may be split)."""
    return any(role_of(c) is EngineRole.PREFILL for c in candidates) and any(map(decodes_transferred_kv, candidates))


def with_split(request: RequestProfile, decision: Decision, candidates: Sequence[Candidate],
               profile: RoutingProfile, rule: SplitRule) -> Decision:
    """``decision`` (the router's, over co-located replicas) with the pairs put first when
    ``rule`` splits the request, or when no co-located replica can take it (whatever the rule:
    a pair is then the only way to serve it); as it is when the fleet has no pair for it or the
    rule keeps it whole. The reason gains ``split:`` or ``whole:`` and why."""
    if request.pinned_variant is not None:
        candidates = [c for c in candidates if c.variant.name == request.pinned_variant]
    if rule.crosses_variants and not decision.meets_budget:
        meeting = [p for p in pairs_for(request, candidates, profile, None)
                   if request.budget.fits(pair_prediction(request, p))]
        if meeting:
            variant = meeting[0].decode.candidate.variant.name
            pairs = tuple(p for p in meeting if p.decode.candidate.variant.name == variant)
            return _split(request, decision, pairs, "a pair meets the budget no whole replica meets")
    pairs = pairs_for(request, candidates, profile, decision.variant)
    if not pairs:
        return decision
    whole = _whole(decision, candidates)
    if whole is None:  # no rule refuses a request a pair can serve and nothing else can
        return _split(request, decision, pairs, "no co-located replica")
    split, why = rule.split(request, whole, pairs[0])
    if not split:
        return dataclasses.replace(decision, reason=f"{decision.reason};whole:{why}")
    return _split(request, decision, pairs, why)


def _split(request: RequestProfile, decision: Decision, pairs: Sequence[Pair], why: str) -> Decision:
    """``decision`` with ``pairs`` ranked first (each decode replica with its prefill replica)."""
    decodes = tuple(p.decode.candidate.replica for p in pairs)
    return dataclasses.replace(
        decision,
        variant=pairs[0].decode.candidate.variant.name,
        ranked=(*decodes, *decision.ranked),
        reason=f"{decision.reason};split:{why}" if decision.ranked else f"split:{why}",
        meets_budget=decision.meets_budget or request.budget.fits(pair_prediction(request, pairs[0])),
        predictions={**decision.predictions, **{p.decode.candidate.replica.id: pair_prediction(request, p) for p in pairs}},
        prefill_for={p.decode.candidate.replica.id: p.prefill.candidate.replica for p in pairs},
        blocked_by=None,
    )


def _whole(decision: Decision, candidates: Sequence[Candidate]) -> Option | None:
    """The head co-located replica as the router predicted it (None: the router ranked none)."""
    if not decision.ranked:
        return None
    head = decision.ranked[0]
    candidate = next((c for c in candidates if c.replica.id == head.id), None)
    prediction = decision.predictions.get(head.id)
    if candidate is None or prediction is None:
        return None
    return Option(candidate, prediction, 0.0)
