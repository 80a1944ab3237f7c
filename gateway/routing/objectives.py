"""Objectives: order the variants that survived the filters, best first, and say why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import RequestProfile
from gateway.routing.plugin import Option, VariantOrder, expected_cost_usd
from gateway.routing.predictors import prefill_interference_ms, prefill_ms


def _variant(option: Option) -> str:
    return option.candidate.variant.name


@dataclass(frozen=True, slots=True)
class CheapestWithinBudgetObjective:
    """The cheapest variant predicted to meet the request's budget (inflated by ``margin``);
    when none can, the fastest, and the decision says so.

    With ``interference_weight`` > 0 a variant meets a TPOT budget only if its predicted TPOT
    plus that weight x the expected stall from other prompts' prefill (see
    ``prefill_interference_ms``) fits too: a short answer on a replica in a burst of prompts
    goes to a quieter variant when one fits, at that variant's price.

    With ``protect_decodes`` a variant fits only if this prompt's prefill also fits in the decode
    slack of the requests already in flight on its replica (``decode_slack_ms``): a prompt that
    would stall a short answer there past its budget goes where it harms nobody, when it can.

    Order: variants that meet the budget by expected cost (ties: faster first), then the others
    by predicted end-to-end latency. Inputs: each variant's best prediction, its replica's
    prefill backlog and rate and its in-flight requests' slack, and the variant's price.
    """

    name: str = "cheapest-within-budget"
    type: ClassVar[str] = "cheapest-within-budget"
    margin: float = 1.1
    # Extra margin per unit of the replica's utilisation: a busy replica's latency has a long tail.
    load_margin: float = 0.0
    interference_weight: float = 0.0
    protect_decodes: bool = False

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        fits = {
            id(o): request.budget.fits(o.prediction, self._margin(o)) and self._decode_fits(request, o)
            and self._spares_decodes(request, o)
            for o in best
        }
        within = [o for o in best if fits[id(o)]]
        beyond = [o for o in best if not fits[id(o)]]
        within.sort(key=lambda o: (expected_cost_usd(request, o), o.prediction.e2e_ms))
        beyond.sort(key=lambda o: (not self._spares_decodes(request, o), o.prediction.e2e_ms, expected_cost_usd(request, o)))
        variants = tuple(_variant(o) for o in within + beyond)
        if within:
            reason = "cheapest-within-budget" if len(best) > 1 else "only-variant-within-budget"
            return VariantOrder(variants, reason, meets_budget=True)
        return VariantOrder(variants, "fastest-none-within-budget", meets_budget=False)

    def _decode_fits(self, request: RequestProfile, option: Option) -> bool:
        # Compared with the budget as is: ``margin`` covers the prediction's error, this the tail.
        if not self.interference_weight or request.budget.tpot_ms is None:
            return True
        stall_ms = self.interference_weight * prefill_interference_ms(request, option.candidate, option.prediction)
        return option.prediction.tpot_ms + stall_ms <= request.budget.tpot_ms

    def _spares_decodes(self, request: RequestProfile, option: Option) -> bool:
        slack_ms = option.candidate.state.decode_slack_ms
        if not self.protect_decodes or slack_ms is None:
            return True
        return prefill_ms(request, option.candidate.variant) <= slack_ms

    def _margin(self, option: Option) -> float:
        return self.margin * (1.0 + self.load_margin * option.prediction.utilisation)


@dataclass(frozen=True, slots=True)
class FastestObjective:
    """The variant with the lowest predicted end-to-end latency (ties: cheaper first)."""

    name: str = "fastest"
    type: ClassVar[str] = "fastest"

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        ranked = sorted(best, key=lambda o: (o.prediction.e2e_ms, expected_cost_usd(request, o)))
        head_meets = request.budget.fits(ranked[0].prediction)
        return VariantOrder(tuple(_variant(o) for o in ranked), "fastest", head_meets)


@dataclass(frozen=True, slots=True)
class FixedOrderObjective:
    """Variants in the configured ``preference`` order (unlisted ones after, by latency): baselines such as
    always-standard or always-fast, and operators who want a plain preference list."""

    name: str = "fixed-order"
    type: ClassVar[str] = "fixed-order"
    preference: tuple[str, ...] = ()

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        rank = {variant: i for i, variant in enumerate(self.preference)}
        ranked = sorted(best, key=lambda o: (rank.get(_variant(o), len(rank)), o.prediction.e2e_ms))
        head_meets = request.budget.fits(ranked[0].prediction)
        return VariantOrder(tuple(_variant(o) for o in ranked), "fixed-order", head_meets)


@dataclass(frozen=True, slots=True)
class MostHeadroomObjective:
    """A fixed fleet's objective: serve as many requests within budget as the replicas can, so the
    variant predicted to meet the request's budget with the most room goes first, and cost only
    breaks ties (a fixed fleet's bill is the same whether a replica is busy or idle: an idle
    standard replica is free capacity, not an expense).

    Room is the request's risk, the largest of its predicted TTFT, end-to-end and TPOT over their
    targets, where the TPOT counts the stall other prompts' prefill is expected to add
    (``prefill_interference_ms`` x ``interference_weight``); a prompt whose prefill would push a
    request already decoding there past its budget (its prefill exceeds the replica's least
    ``decode_slack_ms``) adds ``harm_penalty``: the harm it does to others counts like its own
    miss. Options whose risk is within ``tie`` of the lowest are ordered by expected cost.

    The objective of an autoscaled fleet, where an idle replica can be given back, is
    ``cheapest-within-budget``. Inputs: each variant's best prediction, its replica's prefill
    backlog and rate and least decode slack, the variant's price; range: risk >= 0, 1 = at budget.
    """

    name: str = "most-headroom"
    type: ClassVar[str] = "most-headroom"
    interference_weight: float = 1.0
    harm_penalty: float = 1.0
    tie: float = 0.0

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        risk = {id(o): self.risk(request, o) for o in best}
        ranked = sorted(best, key=lambda o: (risk[id(o)], expected_cost_usd(request, o)))
        lowest = risk[id(ranked[0])]
        head = min((o for o in ranked if risk[id(o)] <= lowest + self.tie),
                   key=lambda o: (expected_cost_usd(request, o), risk[id(o)]))
        ordered = [head, *(o for o in ranked if o is not head)]
        meets = risk[id(head)] <= 1.0
        reason = "most-headroom" if meets else "most-headroom-none-within-budget"
        return VariantOrder(tuple(_variant(o) for o in ordered), reason, meets_budget=meets)

    def risk(self, request: RequestProfile, option: Option) -> float:
        """How many times its tightest target the request is predicted to take on ``option``
        (0: no target), plus ``harm_penalty`` if its prefill breaks a decode in flight there."""
        budget, prediction = request.budget, option.prediction
        ratios = [0.0]
        if budget.ttft_ms:
            ratios.append(prediction.ttft_ms / budget.ttft_ms)
        if budget.latency_ms:
            ratios.append(prediction.e2e_ms / budget.latency_ms)
        if budget.tpot_ms:
            stall_ms = self.interference_weight * prefill_interference_ms(request, option.candidate, prediction)
            ratios.append((prediction.tpot_ms + stall_ms) / budget.tpot_ms)
        slack_ms = option.candidate.state.decode_slack_ms
        harms = slack_ms is not None and prefill_ms(request, option.candidate.variant, option.candidate.cached_tokens) > slack_ms
        return max(ratios) + (self.harm_penalty if harms else 0.0)
