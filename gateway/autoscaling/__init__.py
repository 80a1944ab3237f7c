"""The autoscaling gauge: what the lifecycle's hooks count of each autoscaled model's traffic
(``demand_keeper.py``, into the demand store of ``gateway.state.demand``) and the replicas each
variant needs for it (``gauge.py``: ``duet_desired_replicas``, read at each /metrics scrape).
Above the lifecycle (the keeper reads its types) and wired by the composer (``gateway.runtime``,
the replay); the arithmetic itself is ``gateway.scaling``, pure.

This package is the gauge's public surface for code outside ``gateway/`` (the replay's autoscaled
fleet, duet plan): the keeper and its store, and the arithmetic they size with (and split a
variant's count over its engine groups with)."""

from gateway.autoscaling.demand_keeper import DemandKeeper
from gateway.autoscaling.gauge import FleetSignal, ModelNeed, model_need, sizing_for
from gateway.scaling import (
    Autoscaling,
    CapacityCurve,
    DemandMeter,
    FloorSchedule,
    GroupShare,
    ScheduleStep,
    TaskDemand,
    TaskSizing,
    VariantNeed,
    desired_replicas,
    peak,
    schedule_from_counts,
    split_replicas,
)
from gateway.state.demand import InMemoryDemand

__all__ = [
    "Autoscaling", "CapacityCurve", "DemandKeeper", "DemandMeter", "FleetSignal", "FloorSchedule", "GroupShare",
    "InMemoryDemand", "ModelNeed", "ScheduleStep", "TaskDemand", "TaskSizing", "VariantNeed", "desired_replicas",
    "model_need", "peak", "schedule_from_counts", "sizing_for", "split_replicas",
]
