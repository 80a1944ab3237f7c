"""The fleet each autoscaled model needs now: the numbers behind ``duet_desired_replicas{model,
variant}``, ``duet_desired_group_replicas{model, variant, group}`` (a variant of several engine
groups: its count split over them by ``gateway.scaling.group_split``) and
``duet_demand_busy_replicas``, and the admin route that explains them.

For every model whose config has ``autoscaling``, the demand store's demand per task over the
last ``scrape_interval_s`` and the last ``rate_window_s``; per task the window with the higher
rate (``peak``: a burst raises the count at the next scrape, a lull lowers it only once the
long window forgets); sized by ``desired_replicas`` with each configured task's TPOT budget and
answer length (the learned median when the state store has one, else the configured one); and
never below a variant's schedule at the time of day (UTC; ``gateway.scaling.schedule``), so the
one gauge carries max(schedule, reactive) to whichever autoscaler reads it.

Computed when read (``FleetSignal.refresh``: the /metrics handler and the admin route call it),
not on a loop of its own: Prometheus' collection is synchronous and the shared demand's read is
not, and reading at the scrape makes the gauge as fresh as the scrape itself, always from the
active config (a reload that adds, changes or removes a model's autoscaling shows at the next
scrape). When the shared store cannot answer, a model keeps its last demand, sized with the
config as it is now: a gateway that lost Redis must not shrink the fleet because it sees only
its own share.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gateway.config.policy import Policy
from gateway.config.types import DuetConfig, ModelSpec
from gateway.scaling.demand import TaskDemand, peak
from gateway.scaling.desired import TaskSizing, VariantNeed, desired_replicas
from gateway.scaling.group_split import with_groups
from gateway.scaling.schedule import DAY_S
from gateway.state.demand import DemandStore
from gateway.state.lengths import LengthEstimates
from gateway.state.redis.link import StoreUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelNeed:
    """One model's reading: the demand per task over the short and the long window, the peak
    of the two it was sized on, and each variant's need. ``fresh``: the demand was read now
    (False: the shared store did not answer, the last demand read is reused)."""

    model: str
    windows_s: tuple[float, float]
    short: Mapping[str, TaskDemand]
    long: Mapping[str, TaskDemand]
    variants: Mapping[str, VariantNeed]
    fresh: bool = True

    @property
    def demand(self) -> dict[str, TaskDemand]:
        return peak(self.short, self.long)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "fresh": self.fresh,
            "windows_s": {"short": self.windows_s[0], "long": self.windows_s[1]},
            "demand": {task: _demand_json(d, self.short.get(task), self.long.get(task)) for task, d in self.demand.items()},
            "variants": [{"variant": need.variant, "tasks": dict(need.tasks), "batch": need.batch,
                          "busy_replicas": round(need.busy_replicas, 4), "floor": need.floor, "desired": need.desired,
                          **({"groups": dict(need.groups)} if need.groups else {})}
                         for need in self.variants.values()],
        }


def sizing_for(policy: Policy, model: str, lengths: LengthEstimates | None = None) -> dict[str, TaskSizing]:
    """Every configured task's TPOT budget and answer length (learned for ``model`` when
    ``lengths`` knows it, else configured). One definition for the gauge, the rendered floors,
    the replay's autoscaler and duet plan."""
    return {task: TaskSizing(d.tpot_ms, (lengths.expected(model, task) if lengths else None) or d.expected_output_tokens)
            for task, d in policy.tasks.items()}


def model_need(spec: ModelSpec, policy: Policy, lengths: LengthEstimates | None,
               windows: tuple[Mapping[str, TaskDemand], Mapping[str, TaskDemand]],
               seconds_of_day: float | None = None) -> ModelNeed:
    """``spec``'s need for the demand over its (short, long) windows at ``seconds_of_day`` (UTC,
    for the schedules' floors; None: none); ``spec`` must be autoscaled (``lengths`` None: the
    configured answer lengths until answers are seen)."""
    scaling = spec.autoscaling
    assert scaling is not None
    short, long = windows
    variants = desired_replicas(list(spec.variants.values()), peak(short, long),
                                sizing_for(policy, spec.name, lengths), scaling, seconds_of_day)
    variants = {name: with_groups(need, spec.engine_groups.get(name, ())) for name, need in variants.items()}
    return ModelNeed(spec.name, (scaling.scrape_interval_s, scaling.rate_window_s), short, long, variants)


class FleetSignal:
    """Every autoscaled model's need, as ``refresh`` last computed it for the active config
    (``clock``: Unix seconds, whose time of day in UTC the schedules read)."""

    def __init__(self, config: Callable[[], DuetConfig], demand: DemandStore,
                 lengths: Callable[[], LengthEstimates], clock: Callable[[], float] = time.time) -> None:
        self._config = config
        self._clock = clock
        self._demand = demand
        self._lengths = lengths
        self._needs: dict[str, ModelNeed] = {}
        self._failing = False

    async def refresh(self) -> dict[str, ModelNeed]:
        """Read the demand of each autoscaled model of the active config and size its variants."""
        config, lengths = self._config(), self._lengths()
        of_day = self._clock() % DAY_S
        needs: dict[str, ModelNeed] = {}
        for name, spec in config.models.items():
            if (scaling := spec.autoscaling) is None:
                continue
            try:
                short, long = await self._demand.demand(
                    name, (scaling.scrape_interval_s, scaling.rate_window_s), scaling.rate_window_s)
            except StoreUnavailable as exc:
                self._unavailable(exc)
                if (last := self._needs.get(name)) is not None:
                    needs[name] = replace(model_need(spec, config.policy, lengths, (last.short, last.long), of_day),
                                          fresh=False)
                continue
            needs[name] = model_need(spec, config.policy, lengths, (short, long), of_day)
        if self._failing and all(need.fresh for need in needs.values()):
            log.info("autoscaling: the shared demand answers again")
            self._failing = False
        self._needs = needs
        return needs

    def variant_needs(self) -> Iterator[tuple[str, VariantNeed]]:
        """(model, variant need) of the last refresh, for the gauges."""
        for model, need in self._needs.items():
            for variant in need.variants.values():
                yield model, variant

    def _unavailable(self, exc: StoreUnavailable) -> None:
        if not self._failing:
            log.warning("autoscaling: the shared demand cannot be read (%s); the gauges keep the last demand read", exc)
        self._failing = True


def _demand_json(peak_demand: TaskDemand, short: TaskDemand | None, long: TaskDemand | None) -> dict[str, Any]:
    def one(d: TaskDemand | None) -> dict[str, Any] | None:
        return None if d is None else {"rate_per_s": round(d.rate_per_s, 4), "prompt_tokens": round(d.prompt_tokens, 1),
                                       "output_tokens": None if d.output_tokens is None else round(d.output_tokens, 1)}
    return {"sized": one(peak_demand), "short": one(short), "long": one(long)}
