"""Which requests online parity checks (gateway.parity.shadow runs the checks), decided when a
request is dispatched: a share of those a high-speed variant serves, per (variant, task), is
checked against the model's standard; and, for a ``shadow``-stage variant (no live traffic), a
share of the standard's is mirrored to it. A drawn request's answer is kept as its client
receives it (``gateway.parity.tap``), and only the other side is run as shadow work.

This is all that a request that is not sampled pays, so it is kept to a settings read, a share
look-up and, only when the share is above 0, a keyed hash of the request id
(``make bench-router`` measures it against the 50 us budget)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config.online_parity import OnlineParitySettings
from gateway.config.types import ModelSpec
from gateway.domain import RolloutStage, Variant, VariantKind
from gateway.endpoints import ChatBody
from gateway.flow.exchange import Attempt, Exchange
from gateway.routing.rollout import request_draw

SHADOW = b"shadow"  # the draw's purpose: independent of the canary's draw for the same request


@dataclass(frozen=True, slots=True)
class Sample:
    """A request to check: the standard and the candidate variant, the share it was drawn at, and
    which of the two served it live (the other is run as shadow work)."""

    standard: Variant
    candidate: Variant
    share: float
    live_is_candidate: bool = True

    @property
    def shadow_side(self) -> Variant:
        """The variant the check runs the request on."""
        return self.standard if self.live_is_candidate else self.candidate


def shadow_sample(exchange: Exchange, attempt: Attempt) -> Sample | None:
    """The pair to check when ``attempt``'s answer is drawn to be scored; else None."""
    settings = exchange.config.online_parity
    if not settings.enabled or type(exchange.inbound.body) is not ChatBody:  # the verifiers read chat
        return None
    sample = pairing(exchange, attempt.variant, settings)
    if sample is None or request_draw(exchange.request_id, SHADOW) >= sample.share:
        return None
    return sample


def pairing(exchange: Exchange, served: Variant, settings: OnlineParitySettings) -> Sample | None:
    """A high-speed variant is checked against the model's standard; a request the standard
    served is mirrored to a shadow-stage variant with a share for its task. None: nothing to check."""
    task = exchange.plan.profile.task
    model = exchange.plan.target.model
    if served.kind is not VariantKind.FULL:
        share = settings.share(served.key, task)
        standard = standard_of(model) if share > 0 else None
        return None if standard is None else Sample(standard, served, share)
    for variant in model.variants.values():
        if variant.rollout.stage is RolloutStage.SHADOW and (share := settings.share(variant.key, task)) > 0:
            return Sample(served, variant, share, live_is_candidate=False)
    return None


def standard_of(model: ModelSpec) -> Variant | None:
    return next((v for v in model.variants.values() if v.kind is VariantKind.FULL), None)
