"""The router: runs a routing profile over the candidates of one request and returns a Decision.

Pure and synchronous. ``explain=True`` records every plugin's verdict and score for
``duet explain`` and the dry-run endpoint; the hot path skips that bookkeeping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.decision import PINNED_VARIANT, Blocker, Decision, Verdict
from gateway.domain import Candidate, RequestProfile
from gateway.routing.plugin import Filter, Objective, Option, Predictor, Scorer


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    scorer: Scorer  # or a PoolScorer, which the router asks about every candidate at once
    weight: float


@dataclass(frozen=True, slots=True)
class RoutingProfile:
    """A named pipeline of plugin instances: filters -> predictor -> scorers -> objective."""

    name: str
    filters: tuple[Filter, ...]
    predictor: Predictor
    scorers: tuple[WeightedScorer, ...]
    objective: Objective


def route(
    request: RequestProfile,
    candidates: Sequence[Candidate],
    profile: RoutingProfile,
    *,
    explain: bool = False,
) -> Decision:
    """Decide which variant and replicas serve ``request``. ``ranked`` is empty when no candidate
    survives; ``blocked_by`` then names the filter that rejected most (its name and type), and
    ``reason`` reads ``no-candidate:<filter name>``."""
    verdicts: list[Verdict] = []
    if request.pinned_variant is not None:
        candidates = [c for c in candidates if c.variant.name == request.pinned_variant]
    survivors, rejected_by = _filter(request, candidates, profile.filters, verdicts if explain else None)
    if not survivors:
        blocker = _blocker(rejected_by)
        return Decision(
            model=request.model, variant=None, ranked=(), reason=f"no-candidate:{blocker.name}",
            meets_budget=False, verdicts=tuple(verdicts), profile=profile.name, blocked_by=blocker,
        )
    pooled = _pool_scores(request, survivors, profile.scorers)
    options = [_option(request, c, profile, pooled, verdicts if explain else None) for c in survivors]
    by_variant: dict[str, list[Option]] = {}
    for option in options:
        by_variant.setdefault(option.candidate.variant.name, []).append(option)
    for group in by_variant.values():
        group.sort(key=lambda o: (-o.score, o.prediction.e2e_ms))
    order = profile.objective.order(request, [group[0] for group in by_variant.values()])
    ranked = tuple(o.candidate.replica for variant in order.variants for o in by_variant[variant])
    reason = "pinned" if request.pinned_variant is not None else order.reason
    return Decision(
        model=request.model, variant=order.variants[0], ranked=ranked, reason=reason,
        meets_budget=order.meets_budget,
        predictions={o.candidate.replica.id: o.prediction for o in options},
        verdicts=tuple(verdicts), profile=profile.name,
    )


def _filter(
    request: RequestProfile,
    candidates: Sequence[Candidate],
    filters: Sequence[Filter],
    verdicts: list[Verdict] | None,
) -> tuple[list[Candidate], Counter[Filter]]:
    survivors: list[Candidate] = []
    rejected_by: Counter[Filter] = Counter()
    for candidate in candidates:
        for plugin in filters:
            kept, why = plugin.keep(request, candidate)
            if verdicts is not None:
                verdicts.append(Verdict(plugin.name, candidate.replica.id, kept, None, why))
            if not kept:
                rejected_by[plugin] += 1
                break
        else:
            survivors.append(candidate)
    return survivors, rejected_by


def _blocker(rejected_by: Counter[Filter]) -> Blocker:
    """The filter that rejected most candidates; with none rejected, there were none to reject:
    the request pins a variant without replicas."""
    if not rejected_by:
        return Blocker(PINNED_VARIANT, PINNED_VARIANT)
    plugin = rejected_by.most_common(1)[0][0]
    return Blocker(plugin.name, plugin.type)


def _pool_scores(
    request: RequestProfile, survivors: Sequence[Candidate], scorers: Sequence[WeightedScorer]
) -> dict[int, dict[str, float]]:
    """Scorer index -> replica id -> score, for the scorers that score all candidates at once."""
    pooled = {}
    for index, weighted in enumerate(scorers):
        score_pool = getattr(weighted.scorer, "score_pool", None)  # PoolScorer; no Protocol isinstance per request
        if score_pool is not None:
            values = score_pool(request, survivors)
            pooled[index] = {c.replica.id: value for c, value in zip(survivors, values, strict=True)}
    return pooled


def _option(
    request: RequestProfile, candidate: Candidate, profile: RoutingProfile, pooled: dict[int, dict[str, float]],
    verdicts: list[Verdict] | None,
) -> Option:
    prediction = profile.predictor.predict(request, candidate)
    total_weight = sum(w.weight for w in profile.scorers) or 1.0
    score = 0.0
    for index, weighted in enumerate(profile.scorers):
        if index in pooled:
            value = pooled[index][candidate.replica.id]
        else:
            value = weighted.scorer.score(request, candidate, prediction)
        score += weighted.weight * value
        if verdicts is not None:
            verdicts.append(Verdict(weighted.scorer.name, candidate.replica.id, True, value, ""))
    return Option(candidate, prediction, score / total_weight)
