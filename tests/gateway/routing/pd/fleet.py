"""A P/D fleet as plain data for the pd tests: co-located, prefill and decode replicas."""

from __future__ import annotations

import dataclasses

from gateway.domain import Candidate, EngineConfig, EngineRole, Health, Variant
from gateway.routing.filters import ContextFitsFilter, HealthyFilter, TaskAllowedFilter
from gateway.routing.objectives import CheapestWithinBudgetObjective
from gateway.routing.predictors import QueueAwareLatencyPredictor
from gateway.routing.roles import EngineRoleFilter
from gateway.routing.router import RoutingProfile, WeightedScorer
from gateway.routing.scorers import LeastLoadedScorer

from ..factories import FAST, STANDARD, candidate

NIXL = "NixlConnector"

PROFILE = RoutingProfile(
    name="default",
    filters=(HealthyFilter(), ContextFitsFilter(), TaskAllowedFilter(), EngineRoleFilter()),
    predictor=QueueAwareLatencyPredictor(),
    scorers=(WeightedScorer(LeastLoadedScorer(), 1.0),),
    objective=CheapestWithinBudgetObjective(),
)

# A speculative variant that verifies with the standard weights (may decode standard's KV).
FAST_ON_STANDARD = dataclasses.replace(FAST, shares_weights_with="standard", allowed_tasks=None)


def replica(variant: Variant, index: int, role: EngineRole, connector: str | None = NIXL,
            **state: object) -> Candidate:
    base = candidate(variant, index, **state)
    engine = EngineConfig(role, kv_connector=None if role is EngineRole.BOTH else connector)
    return dataclasses.replace(base, replica=dataclasses.replace(base.replica, engine=engine))


def both(index: int = 0, variant: Variant = STANDARD, **state: object) -> Candidate:
    return replica(variant, index, EngineRole.BOTH, **state)


def prefill(index: int, variant: Variant = STANDARD, **state: object) -> Candidate:
    return replica(variant, index, EngineRole.PREFILL, **state)


def decode(index: int, variant: Variant = STANDARD, **state: object) -> Candidate:
    return replica(variant, index, EngineRole.DECODE, **state)


DOWN = {"health": Health.DOWN}
