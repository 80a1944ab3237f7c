"""Which finished requests online parity checks (gateway.parity.shadow runs the checks): a share
of those a high-speed variant served, per (variant, task), checked against the model's standard;
and, for a ``shadow``-stage variant (no live traffic), a share of the standard's mirrored to it.

This is all that a request that is not sampled pays, so it is kept to a settings read, a share
look-up and, only when the share is above 0, a keyed hash of the request id
(``make bench-router`` measures it against the 50 us budget)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config.online_parity import OnlineParitySettings
from gateway.config.types import ModelSpec
from gateway.domain import Outcome, RolloutStage, Variant, VariantKind
from gateway.flow.body import ChatBody
from gateway.flow.exchange import Exchange
from gateway.routing.rollout import request_draw

SHADOW = b"shadow"  # the draw's purpose: independent of the canary's draw for the same request


@dataclass(frozen=True, slots=True)
class Sample:
    """A request to check: the standard and the candidate variant, and the share it was drawn at."""

    standard: Variant
    candidate: Variant
    share: float


def shadow_sample(exchange: Exchange, outcome: Outcome) -> Sample | None:
    """The pair to check for a request that ended with ``outcome``, when it is drawn; else None."""
    settings = exchange.config.online_parity
    if not settings.enabled or not outcome.ok:
        return None
    sample = pairing(exchange, settings)
    if sample is None or request_draw(exchange.request_id, SHADOW) >= sample.share:
        return None
    if type(exchange.inbound.body) is not ChatBody:  # the verifiers read chat completions
        return None
    return sample


def pairing(exchange: Exchange, settings: OnlineParitySettings) -> Sample | None:
    """A high-speed variant is checked against the model's standard; a request the standard
    served is mirrored to a shadow-stage variant with a share for its task. None: nothing to check."""
    served = exchange.attempt.variant if exchange.attempt is not None else None
    if served is None:
        return None
    task = exchange.plan.profile.task
    model = exchange.plan.target.model
    if served.kind is not VariantKind.FULL:
        share = settings.share(served.key, task)
        standard = standard_of(model) if share > 0 else None
        return None if standard is None else Sample(standard, served, share)
    for variant in model.variants.values():
        if variant.rollout.stage is RolloutStage.SHADOW and (share := settings.share(variant.key, task)) > 0:
            return Sample(served, variant, share)
    return None


def standard_of(model: ModelSpec) -> Variant | None:
    return next((v for v in model.variants.values() if v.kind is VariantKind.FULL), None)
