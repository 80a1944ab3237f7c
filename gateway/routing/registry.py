"""Plugin types by kebab-case name. The config names plugin instances by type; this table is the
only place a type name meets its class, so adding a plugin is one line here and one class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from gateway.routing.baselines import BestScoreObjective, RoundRobinObjective
from gateway.routing.filters import (
    ContextFitsFilter,
    ErrorRateFilter,
    HealthyFilter,
    TaskAllowedFilter,
    ToolsSupportedFilter,
)
from gateway.routing.objectives import CheapestWithinBudgetObjective, FastestObjective, FixedOrderObjective
from gateway.routing.predictors import QueueAwareLatencyPredictor, StepModelPredictor
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


PLUGIN_TYPES: Mapping[str, PluginType] = MappingProxyType(
    {
        "healthy": PluginType("filter", HealthyFilter),
        "context-fits": PluginType("filter", ContextFitsFilter),
        "tools-supported": PluginType("filter", ToolsSupportedFilter),
        "task-allowed": PluginType("filter", TaskAllowedFilter),
        "error-rate": PluginType("filter", ErrorRateFilter),
        "queue-aware-latency": PluginType("predictor", QueueAwareLatencyPredictor),
        "step-model": PluginType("predictor", StepModelPredictor),
        "least-loaded": PluginType("scorer", LeastLoadedScorer),
        "decode-slack": PluginType("scorer", DecodeSlackScorer),
        "predicted-latency": PluginType("scorer", PredictedLatencyScorer),
        "low-error": PluginType("scorer", LowErrorScorer),
        "observed-ttft": PluginType("scorer", ObservedTtftScorer),
        "cheapest-within-budget": PluginType("objective", CheapestWithinBudgetObjective),
        "fastest": PluginType("objective", FastestObjective),
        "fixed-order": PluginType("objective", FixedOrderObjective),
        "round-robin": PluginType("objective", RoundRobinObjective),
        "best-score": PluginType("objective", BestScoreObjective),
    }
)
