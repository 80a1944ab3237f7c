"""The utilisation a plan's fleet runs at, in the gauge's own terms: the replicas the gateway's
``desired_replicas`` says the plan's traffic keeps fully busy on each variant, over the
replicas the plan found it needs there. Written into the config (``autoscaling.
utilisation_by_variant``), it makes the gauge ask for the plan's fleet at the plan's traffic, and
for proportionally more or fewer replicas as the traffic changes.

The traffic is the search's: the tuning window's seeds at the plan's rate, as the gateway's
demand meter would read them (arrivals per second, mean prompt, mean answer). The variants'
speed priors are the ones the plan's first seed replayed with (off by its drawn error), as a
gateway holds priors that are measured, not exact."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from gateway.autoscaling import Autoscaling, TaskDemand, TaskSizing, desired_replicas, sizing_for
from gateway.fleet.capacity.search import Fleet
from gateway.fleet.workload.traces import Arrival
from gateway.flow import DuetConfig


def traffic_demand(schedules: Sequence[Sequence[Arrival]], duration_s: float) -> dict[str, TaskDemand]:
    """Each task's demand over ``schedules`` (each ``duration_s`` long), pooled."""
    by_task: dict[str, list[Arrival]] = {}
    for schedule in schedules:
        for a in schedule:
            by_task.setdefault(a.task, []).append(a)
    seconds = duration_s * len(schedules)
    return {task: TaskDemand(len(mine) / seconds, statistics.fmean(a.input_tokens for a in mine),
                             statistics.fmean(a.output_tokens for a in mine))
            for task, mine in sorted(by_task.items())}


def sizing_of(config: DuetConfig) -> dict[str, TaskSizing]:
    """Every configured task type's TPOT budget and typical answer, as the gauge sizes them."""
    (model,) = config.models
    return sizing_for(config.policy, model)


def busy_replicas(config: DuetConfig, demand: Mapping[str, TaskDemand]) -> dict[str, float]:
    """variant -> the replicas ``demand`` keeps fully busy on it (the gauge's arithmetic)."""
    (model,) = config.models.values()
    needs = desired_replicas(list(model.variants.values()), demand, sizing_of(config), Autoscaling(utilisation=1.0))
    return {name: need.busy_replicas for name, need in needs.items()}


def fleet_utilisation(config: DuetConfig, demand: Mapping[str, TaskDemand], fleet: Fleet) -> dict[str, float]:
    """variant -> busy replicas over the fleet's replicas, for each variant that has both (at most 1)."""
    busy = busy_replicas(config, demand)
    return {name: round(min(1.0, busy[name] / count), 4) for name, count in fleet.counts.items()
            if count and busy.get(name, 0.0) > 0}
