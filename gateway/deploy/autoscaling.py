"""What scales each autoscaled Deployment on the gateway's gauges (every gateway replica reports
the same fleet-wide value, since demand is shared through Redis):

    hpa    an ``autoscaling/v2`` HorizontalPodAutoscaler with the gauge as an External metric,
           served by prometheus-adapter (``adapter_values``: its Helm values)
    keda   a KEDA ScaledObject with a Prometheus trigger (KEDA makes and owns the HPA itself)

A variant of one engine is one Deployment, scaled on ``duet_desired_replicas{model, variant}``.
A variant of several engine groups is one Deployment per group, each scaled on its own series
``duet_desired_group_replicas{model, variant, group}``: the variant's count split over the groups
by ``gateway.scaling.group_split``, which also gives each group's bounds (the split of the
variant's floor and of its most replicas). The split never lowers a group as the total grows, so
each group's count stays within them, and an autoscaler per group, whose stabilisation windows
take a max or a min of readings, sets the split of what one autoscaler on the variant's gauge
would set (the replay's model: one HPA per variant, its count split).

One of the two per Deployment, as the model's ``autoscaling.autoscaler`` says: installed together
they are two HPAs writing one Deployment's scale. Both target an average of one unit of the gauge
per replica, so the desired count is ceil(gauge / 1) whatever the current count: the number the
gateway computes is the number the autoscaler sets, within [floor, max_replicas]."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gateway.config.engine_groups import GROUP_LABEL
from gateway.deploy.plan import LABEL_MODEL, LABEL_VARIANT, DeployPlan, VariantDeployment
from gateway.scaling import Autoscaling, split_replicas

METRIC = "duet_desired_replicas"
GROUP_METRIC = "duet_desired_group_replicas"
# The Prometheus the base's ServiceMonitors feed: kube-prometheus-stack installed in namespace
# `monitoring`, whose operator gives every Prometheus it runs the Service `prometheus-operated`.
PROMETHEUS_SERVICE = "http://prometheus-operated.monitoring.svc"
PROMETHEUS_PORT = 9090
ADAPTER_CHART = "prometheus-community/prometheus-adapter"


@dataclass(frozen=True, slots=True)
class ScaledDeployment:
    """One Deployment an autoscaler scales: its name and labels, the gauge series it follows
    (``metric`` selected by ``series``: its label -> value), and the fewest and most replicas
    the gauge can ask of it (``floor``, ``most``)."""

    name: str
    labels: dict[str, str]
    metric: str
    series: dict[str, str]
    floor: int
    most: int
    settings: Autoscaling


def scaled_deployments(d: VariantDeployment) -> list[ScaledDeployment]:
    """The variant's Deployment on its gauge; a variant of several engine groups, each group's
    Deployment on its group's series, between the split of the variant's floor and most."""
    if d.autoscaling is None:
        raise ValueError(f"{d.name} is not autoscaled")
    labels, most = {LABEL_MODEL: d.model, LABEL_VARIANT: d.variant}, max(d.autoscaling.max_replicas, d.floor)
    series = {"model": d.model, "variant": d.variant}
    if len(groups := d.groups) == 1:
        return [ScaledDeployment(d.name, labels, METRIC, series, d.floor, most, d.autoscaling)]
    floors, mosts = split_replicas(d.shares, d.floor), split_replicas(d.shares, most)
    return [ScaledDeployment(d.group_deployment(group), {**labels, GROUP_LABEL: group.name}, GROUP_METRIC,
                             {**series, "group": group.name}, floor, group_most, d.autoscaling)
            for group, floor, group_most in zip(groups, floors, mosts, strict=True)]


def _meta(s: ScaledDeployment) -> dict[str, Any]:
    return {"name": s.name, "labels": s.labels}


def _target(s: ScaledDeployment) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": s.name}


def _behavior(settings: Autoscaling) -> dict[str, Any]:
    """Up to the lowest count asked for over the scale-up window (0: at once), by at most
    ``scale_up_pods`` per ``scale_up_period_s`` when set; down only to the highest count asked for
    over the scale-down window."""
    up: dict[str, Any] = {"stabilizationWindowSeconds": math.ceil(settings.scale_up_stabilization_s)}
    if settings.scale_up_pods is not None:
        up["policies"] = [{"type": "Pods", "value": settings.scale_up_pods,
                           "periodSeconds": math.ceil(settings.scale_up_period_s)}]
    return {"scaleUp": up, "scaleDown": {"stabilizationWindowSeconds": math.ceil(settings.scale_down_stabilization_s)}}


def hpa(s: ScaledDeployment) -> dict[str, Any]:
    """The Deployment's HPA on its series (an External metric, selected by its labels)."""
    # A plain HPA cannot go below one replica (minReplicas 0 needs the alpha HPAScaleToZero
    # feature gate): a Deployment with no floor keeps one; KEDA can take it to zero.
    low = max(1, s.floor)
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": _meta(s),
        "spec": {"scaleTargetRef": _target(s), "minReplicas": low, "maxReplicas": max(s.most, low),
                 "metrics": [{"type": "External", "external": {
                     "metric": {"name": s.metric, "selector": {"matchLabels": s.series}},
                     "target": {"type": "AverageValue", "averageValue": "1"}}}],
                 "behavior": _behavior(s.settings)},
    }


def scaled_object(s: ScaledDeployment, namespace: str) -> dict[str, Any]:
    """The Deployment's KEDA ScaledObject: a Prometheus trigger on its series from the gateways
    in ``namespace``, down to its floor (zero where nothing holds it up)."""
    settings = s.settings
    matchers = ",".join(f'{label}="{value}"' for label, value in {"namespace": namespace, **s.series}.items())
    return {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": _meta(s),
        "spec": {
            "scaleTargetRef": _target(s),
            "minReplicaCount": s.floor, "maxReplicaCount": max(s.most, s.floor),
            "pollingInterval": math.ceil(settings.scrape_interval_s),
            # KEDA's own wait before the last replica goes (1 -> 0); the HPA's window rules the rest.
            "cooldownPeriod": math.ceil(settings.scale_down_stabilization_s),
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": _behavior(settings)}},
            "triggers": [{"type": "prometheus", "metricType": "AverageValue", "metadata": {
                "serverAddress": f"{PROMETHEUS_SERVICE}:{PROMETHEUS_PORT}", "query": f"max({s.metric}{{{matchers}}})",
                "threshold": "1",
                # No series (the gateways not scraped) is an error, which keeps the count, rather
                # than a zero, which would take the Deployment to its floor.
                "ignoreNullValues": "false"}}],
        },
    }


def autoscaler_objects(plan: DeployPlan, namespace: str) -> list[dict[str, Any]]:
    """One HPA or one ScaledObject per autoscaled Deployment (a variant's, or each of its engine
    groups'), as its model chose; none for the rest."""
    return [hpa(s) if s.settings.autoscaler == "hpa" else scaled_object(s, namespace)
            for d in plan.variants if d.autoscaling is not None for s in scaled_deployments(d)]


def adapter_values(plan: DeployPlan) -> dict[str, Any] | None:
    """Helm values for prometheus-adapter (``ADAPTER_CHART``) serving the gauges on the external
    metrics API, or None when no Deployment is scaled by an HPA: the variants' series, and the
    groups' when an HPA scales a group. Every gateway replica reports the same value, so each
    query takes the max over them; the namespace is the HPA's own."""
    scaled = [s for d in plan.variants if d.autoscaling is not None and d.autoscaling.autoscaler == "hpa"
              for s in scaled_deployments(d)]
    if not scaled:
        return None
    rules = [_adapter_rule(METRIC, ("model", "variant"))]
    if any(s.metric == GROUP_METRIC for s in scaled):
        rules.append(_adapter_rule(GROUP_METRIC, ("model", "variant", "group")))
    return {"prometheus": {"url": PROMETHEUS_SERVICE, "port": PROMETHEUS_PORT}, "rules": {"external": rules}}


def _adapter_rule(metric: str, labels: tuple[str, ...]) -> dict[str, Any]:
    """One external metric: its series with every label of ``labels`` set, the max over the
    gateway pods by those labels."""
    present = ",".join(f'{label}!=""' for label in ("namespace", *labels))
    return {
        "seriesQuery": f"{metric}{{{present}}}",
        "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
        "name": {"matches": f"^{metric}$", "as": metric},
        "metricsQuery": f"max by ({', '.join(labels)}) (<<.Series>>{{<<.LabelMatchers>>}})",
    }
