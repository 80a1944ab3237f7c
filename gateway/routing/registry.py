"""Plugin types by kebab-case name. The config names plugin instances by type; this table is the
only place a type name meets its class, so adding a plugin is one line here and one class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from gateway.routing.baselines import BestScoreObjective, RoundRobinObjective, StaticSplitObjective
from gateway.routing.filters import (
    ContextFitsFilter,
    ErrorRateFilter,
    HealthyFilter,
    TaskAllowedFilter,
    ToolsSupportedFilter,
)
from gateway.routing.llmd import LlmdKvCacheUtilizationScorer, LlmdPrefixCacheScorer, LlmdQueueScorer
from gateway.routing.objectives import (
    CheapestWithinBudgetObjective,
    FastestObjective,
    FixedOrderObjective,
    MostHeadroomObjective,
)
from gateway.routing.predictors import QueueAwareLatencyPredictor, StepModelPredictor
from gateway.routing.prefix_affinity import PrefixAffinityScorer
from gateway.routing.production_stack import ProductionStackPrefixScorer
from gateway.routing.roles import EngineRoleFilter
from gateway.routing.rollout import RolloutStageFilter
from gateway.routing.scorers import (
    DecodeSlackScorer,
    LeastLoadedScorer,
    LowErrorScorer,
    ObservedTtftScorer,
    PredictedLatencyScorer,
)

PluginKind = Literal["filter", "predictor", "scorer", "objective"]


@dataclass(frozen=True, slots=True)
class PluginType:
    kind: PluginKind
    cls: type


def _table(kinds: Mapping[PluginKind, tuple[type, ...]]) -> Mapping[str, PluginType]:
    """Each class under the type name it declares (``type``), which is also what a decision
    names when that plugin blocked a request."""
    return MappingProxyType({cls.type: PluginType(kind, cls) for kind, classes in kinds.items() for cls in classes})  # type: ignore[attr-defined]


PLUGIN_TYPES: Mapping[str, PluginType] = _table({
    "filter": (HealthyFilter, ContextFitsFilter, ToolsSupportedFilter, TaskAllowedFilter, ErrorRateFilter,
               RolloutStageFilter, EngineRoleFilter),
    "predictor": (QueueAwareLatencyPredictor, StepModelPredictor),
    "scorer": (LeastLoadedScorer, DecodeSlackScorer, PredictedLatencyScorer, LowErrorScorer, ObservedTtftScorer,
               LlmdQueueScorer, LlmdKvCacheUtilizationScorer, LlmdPrefixCacheScorer, PrefixAffinityScorer,
               ProductionStackPrefixScorer),
    "objective": (CheapestWithinBudgetObjective, MostHeadroomObjective, FastestObjective, FixedOrderObjective,
                  RoundRobinObjective, BestScoreObjective, StaticSplitObjective),
})
