"""One model's autoscaling settings (``models.<name>.autoscaling`` in duet.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gateway.scaling.capacity_curve import CapacityCurve
from gateway.scaling.schedule import FloorSchedule

AUTOSCALERS = ("hpa", "keda")


@dataclass(frozen=True, slots=True)
class Autoscaling:
    """How the gateway sizes a model's variants and what ``duet deploy render`` scales them with.

    ``autoscaler``: ``hpa`` (an HPA per variant on the gauge as an External metric, served by
    prometheus-adapter) or ``keda`` (a KEDA ScaledObject per variant with a Prometheus trigger);
    one of the two, since both installed fight over the same Deployment.
    ``utilisation``: the share of a replica's capacity at the SLOs the fleet is sized to use (the
    rest is headroom); ``utilisation_by_variant`` overrides it per variant (variants differ in
    what their step model leaves out: a fast variant's tight-TPOT traffic runs emptier than a
    standard one's long documents); ``duet plan --write-config`` writes both from the fleet it
    found.
    ``scrape_interval_s``: how often Prometheus reads the gauge; demand is measured over this
    window too, so a rise in traffic shows in the next scrape.
    ``rate_window_s``: the longer window demand is also measured over; the gauge reads the higher
    of the two rates, so a burst raises it at once and a lull lowers it only after this long.
    ``scale_down_stabilization_s``: the autoscaler keeps the highest desired count of this
    window before removing replicas (the HPA's scale-down ``stabilizationWindowSeconds``,
    default 300 s). ``scale_up_stabilization_s``: it adds replicas only up to the lowest count
    of this window (the scale-up one; the HPA's default is 0: at once), so a burst shorter than
    the window, over before a new replica could start, adds none.
    ``max_replicas``: per variant. ``min_replicas``: per variant, raised to one for a variant
    parity makes the only home of some task type.
    ``capacity_by_variant``: per variant, the replicas as a line fitted over several loads of the
    planned traffic (``capacity_curve.py``; ``duet plan-day --fit`` measures it); a variant with
    one is sized by it instead of by its utilisation.
    ``warm_tasks``: the task types a replica must always be ready for (parity's floor keeps one
    replica of a variant that is the only home of one); None: every configured task type. A team
    whose traffic has no long documents names the others, and keeps no standard replica warm for
    a task type it never sends.
    ``scale_up_pods``: at most this many replicas added per ``scale_up_period_s`` (the HPA's
    ``behavior.scaleUp.policies``, one ``Pods`` policy; None: no policy rendered).
    ``schedule_by_variant``: per variant, a floor by the time of day (``schedule.py``): the gauge
    never reports fewer than the schedule asks for now, so the reactive part (which a longer
    scale-up window can then slow down) only adds what today's traffic needs beyond it.
    """

    autoscaler: str = "hpa"
    utilisation: float = 0.7
    scrape_interval_s: float = 15.0
    rate_window_s: float = 120.0
    scale_down_stabilization_s: float = 300.0
    max_replicas: int = 16
    min_replicas: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    utilisation_by_variant: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    scale_up_stabilization_s: float = 0.0
    capacity_by_variant: Mapping[str, CapacityCurve] = field(default_factory=lambda: MappingProxyType({}))
    warm_tasks: frozenset[str] | None = None
    schedule_by_variant: Mapping[str, FloorSchedule] = field(default_factory=lambda: MappingProxyType({}))
    scale_up_pods: int | None = None
    scale_up_period_s: float = 60.0

    def __post_init__(self) -> None:
        if self.autoscaler not in AUTOSCALERS:
            raise ValueError(f"autoscaler '{self.autoscaler}': one of {', '.join(AUTOSCALERS)}")
        for name, value in {"": self.utilisation, **self.utilisation_by_variant}.items():
            if not 0 < value <= 1:
                raise ValueError(f"utilisation{f' of {name}' if name else ''} {value}: in (0, 1]")
        if self.scale_up_pods is not None and (self.scale_up_pods < 1 or not 0 < self.scale_up_period_s <= 1800):
            raise ValueError(f"scale_up_pods {self.scale_up_pods} per {self.scale_up_period_s} s: >= 1 per (0, 1800] s")
        if self.rate_window_s < self.scrape_interval_s:
            raise ValueError(f"rate_window_s {self.rate_window_s} is shorter than scrape_interval_s "
                             f"{self.scrape_interval_s}")

    def utilisation_of(self, variant: str) -> float:
        return self.utilisation_by_variant.get(variant, self.utilisation)

    @property
    def scale_up_policy(self) -> tuple[int, float] | None:
        """(pods, period_s) an HPA may add at most, or None."""
        return None if self.scale_up_pods is None else (self.scale_up_pods, self.scale_up_period_s)

    def scheduled(self, variant: str, seconds_of_day: float | None) -> int:
        """The variant's schedule floor at ``seconds_of_day`` (UTC; None or no schedule: 0)."""
        schedule = self.schedule_by_variant.get(variant)
        return 0 if schedule is None or seconds_of_day is None else schedule.at(seconds_of_day)
