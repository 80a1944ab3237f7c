"""A model's ``autoscaling`` section -> Autoscaling: its references checked (variants, tasks, the
schedule floor's times and counts), each error naming its path."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gateway.config import schema
from gateway.domain import Variant
from gateway.errors import ConfigError
from gateway.scaling import Autoscaling, CapacityCurve, FloorSchedule, ScheduleStep


def build_autoscaling(section: schema.AutoscalingSection | None, variants: Mapping[str, Variant], tasks: set[str],
                 path: str) -> Autoscaling | None:
    if section is None:
        return None
    for i, task in enumerate(section.warm_tasks or []):
        if task not in tasks:
            raise ConfigError(f"{path}.warm_tasks.{i}", f"unknown task '{task}' (known: {sorted(tasks)})")
    for key in ("min_replicas", "utilisation_by_variant", "capacity_by_variant", "schedule_by_variant"):
        for variant_name in getattr(section, key):
            if variant_name not in variants:
                raise ConfigError(f"{path}.{key}.{variant_name}", f"unknown variant (known: {sorted(variants)})")
    if section.rate_window_s < section.scrape_interval_s:
        raise ConfigError(f"{path}.rate_window_s", f"shorter than scrape_interval_s ({section.scrape_interval_s:g} s)")
    for variant_name, low in section.min_replicas.items():
        if low > section.max_replicas:
            raise ConfigError(f"{path}.min_replicas.{variant_name}", f"above max_replicas ({section.max_replicas})")
    schedules = {name: _schedule(steps, section.max_replicas, f"{path}.schedule_by_variant.{name}")
                 for name, steps in section.schedule_by_variant.items()}
    return Autoscaling(section.autoscaler, section.utilisation, section.scrape_interval_s, section.rate_window_s,
                       section.scale_down_stabilization_s, section.max_replicas,
                       MappingProxyType(dict(section.min_replicas)),
                       MappingProxyType(dict(section.utilisation_by_variant)), section.scale_up_stabilization_s,
                       MappingProxyType({name: CapacityCurve(c.intercept, c.per_busy_replica)
                                         for name, c in section.capacity_by_variant.items()}),
                       None if section.warm_tasks is None else frozenset(section.warm_tasks),
                       MappingProxyType(schedules), section.scale_up_pods, section.scale_up_period_s)


def _schedule(steps: list[schema.ScheduleStepSection], most: int, path: str) -> FloorSchedule:
    """A variant's schedule floor: its steps' times (UTC) strictly increasing, none above ``most``."""
    times: list[float] = []
    for i, step in enumerate(steps):
        hours, minutes, *seconds = (int(part) for part in step.at.split(":"))
        times.append(hours * 3600.0 + minutes * 60.0 + (seconds[0] if seconds else 0))
        if i and times[-1] <= times[-2]:
            raise ConfigError(f"{path}.{i}.at", f"{step.at} is not after the step before ({steps[i - 1].at})")
        if step.replicas > most:
            raise ConfigError(f"{path}.{i}.replicas", f"above max_replicas ({most})")
    return FloorSchedule(tuple(ScheduleStep(at, step.replicas) for at, step in zip(times, steps, strict=True)))
