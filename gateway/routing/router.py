"""The router: runs a routing profile over the candidates of one request and returns a Decision.

Pure and synchronous. ``explain=True`` records every plugin's verdict and score for
``duet explain`` and the dry-run endpoint; the hot path skips that bookkeeping. Each plugin runs
once over all the candidates it sees, timed for the given ``ExtensionTimer`` (``routing.timing``;
with ``NO_TIMING``, a replay's, no clock is read).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from time import perf_counter_ns

from gateway.decision import PINNED_VARIANT, Blocker, Decision, Verdict
from gateway.domain import Candidate, Prediction, RequestProfile
from gateway.routing.plugin import Filter, Objective, Option, Predictor, Scorer
from gateway.routing.timing import FILTER, NO_TIMING, OBJECTIVE, PREDICTOR, SCORER, ExtensionTimer


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
    timer: ExtensionTimer = NO_TIMING,
) -> Decision:
    """Decide which variant and replicas serve ``request``. ``ranked`` is empty when no candidate
    survives; ``blocked_by`` then names the filter that rejected most (its name and type), and
    ``reason`` reads ``no-candidate:<filter name>``."""
    verdicts: list[Verdict] | None = [] if explain else None
    timed = timer is not NO_TIMING  # a replay's router records nothing: no clock is read
    if request.pinned_variant is not None:
        candidates = [c for c in candidates if c.variant.name == request.pinned_variant]
    survivors = _filter(request, candidates, profile.filters, verdicts, timer if timed else None)
    if not survivors:
        blocker = _blocker(request, candidates, profile.filters)
        return Decision(
            model=request.model, variant=None, ranked=(), reason=f"no-candidate:{blocker.name}",
            meets_budget=False, verdicts=_in_candidate_order(verdicts, candidates), profile=profile.name,
            blocked_by=blocker,
        )
    options = _options(request, survivors, profile, verdicts, timer if timed else None)
    by_variant: dict[str, list[Option]] = {}
    for option in options:
        by_variant.setdefault(option.candidate.variant.name, []).append(option)
    for group in by_variant.values():
        group.sort(key=lambda o: (-o.score, o.prediction.e2e_ms))
    started = perf_counter_ns() if timed else 0
    order = profile.objective.order(request, [group[0] for group in by_variant.values()])
    if timed:
        timer.observe(OBJECTIVE, profile.objective.name, perf_counter_ns() - started)
    ranked = tuple(o.candidate.replica for variant in order.variants for o in by_variant[variant])
    reason = "pinned" if request.pinned_variant is not None else order.reason
    return Decision(
        model=request.model, variant=order.variants[0], ranked=ranked, reason=reason,
        meets_budget=order.meets_budget,
        predictions={o.candidate.replica.id: o.prediction for o in options},
        verdicts=() if verdicts is None else _in_candidate_order(verdicts, candidates), profile=profile.name,
    )


def _filter(
    request: RequestProfile,
    candidates: Sequence[Candidate],
    filters: Sequence[Filter],
    verdicts: list[Verdict] | None,
    timer: ExtensionTimer | None,
) -> list[Candidate]:
    """The candidates every filter kept, in their order (each filter timed for ``timer``)."""
    survivors = list(candidates)
    for plugin in filters:
        started = perf_counter_ns() if timer is not None else 0
        kept_candidates: list[Candidate] = []
        for candidate in survivors:
            kept, why = plugin.keep(request, candidate)
            if verdicts is not None:
                verdicts.append(Verdict(plugin.name, candidate.replica.id, kept, None, why))
            if kept:
                kept_candidates.append(candidate)
        if timer is not None:
            timer.observe(FILTER, plugin.name, perf_counter_ns() - started)
        survivors = kept_candidates
    return survivors


def _blocker(request: RequestProfile, candidates: Sequence[Candidate], filters: Sequence[Filter]) -> Blocker:
    """The filter that rejected most candidates (each rejected by the first filter that did not
    keep it; of two filters alike, the one that rejected an earlier candidate). Asked again here,
    off the hot path, only for a request none survived (plugins are pure: same answers). With
    none rejected, there were none to reject: the request pins a variant without replicas."""
    rejected_by: Counter[Filter] = Counter()
    for candidate in candidates:
        rejecting = next((plugin for plugin in filters if not plugin.keep(request, candidate)[0]), None)
        if rejecting is not None:
            rejected_by[rejecting] += 1
    if not rejected_by:
        return Blocker(PINNED_VARIANT, PINNED_VARIANT)
    plugin = rejected_by.most_common(1)[0][0]
    return Blocker(plugin.name, plugin.type)


def _options(
    request: RequestProfile, survivors: Sequence[Candidate], profile: RoutingProfile, verdicts: list[Verdict] | None,
    timer: ExtensionTimer | None,
) -> list[Option]:
    """Every survivor with its prediction and its weighted score, each scorer weighing in in
    the profile's order (each plugin timed for ``timer``). A pool scorer sees all the survivors
    at once (``PoolScorer``)."""
    started = perf_counter_ns() if timer is not None else 0
    predictions = [profile.predictor.predict(request, candidate) for candidate in survivors]
    if timer is not None:
        timer.observe(PREDICTOR, profile.predictor.name, perf_counter_ns() - started)
    totals = [0.0] * len(survivors)
    for weighted in profile.scorers:
        started = perf_counter_ns() if timer is not None else 0
        values = _scores(request, survivors, predictions, weighted.scorer)
        if timer is not None:
            timer.observe(SCORER, weighted.scorer.name, perf_counter_ns() - started)
        for index, value in enumerate(values):
            totals[index] += weighted.weight * value
        if verdicts is not None:
            verdicts.extend(Verdict(weighted.scorer.name, c.replica.id, True, value, "")
                            for c, value in zip(survivors, values, strict=True))
    total_weight = sum(w.weight for w in profile.scorers) or 1.0
    return [Option(candidate, prediction, total / total_weight)
            for candidate, prediction, total in zip(survivors, predictions, totals, strict=True)]


def _scores(request: RequestProfile, survivors: Sequence[Candidate], predictions: Sequence[Prediction],
            scorer: Scorer) -> Sequence[float]:
    """``scorer``'s value of each survivor, in their order."""
    score_pool = getattr(scorer, "score_pool", None)  # PoolScorer; no Protocol isinstance per request
    if score_pool is not None:
        values: Sequence[float] = score_pool(request, survivors)
        if len(values) != len(survivors):
            raise ValueError(f"scorer {scorer.name!r} scored {len(values)} of {len(survivors)} candidates")
        return values
    return [scorer.score(request, c, p) for c, p in zip(survivors, predictions, strict=True)]


def _in_candidate_order(verdicts: list[Verdict] | None, candidates: Sequence[Candidate]) -> tuple[Verdict, ...]:
    """The verdicts candidate by candidate (each one's filters, then its scores, in the profile's
    order), as people read them; the router gathers them plugin by plugin."""
    if not verdicts:
        return ()
    position = {c.replica.id: index for index, c in enumerate(candidates)}
    filtered = [v for v in verdicts if v.score is None]
    scored = [v for v in verdicts if v.score is not None]
    return (*sorted(filtered, key=lambda v: position[v.replica_id]), *sorted(scored, key=lambda v: position[v.replica_id]))
