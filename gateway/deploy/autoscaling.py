"""What scales each autoscaled variant's Deployment on the gateway's gauge
``duet_desired_replicas{model, variant}`` (the replicas the variant needs now; every gateway
replica reports the same fleet-wide value, since demand is shared through Redis):

    hpa    an ``autoscaling/v2`` HorizontalPodAutoscaler with the gauge as an External metric,
           served by prometheus-adapter (``adapter_values``: its Helm values)
    keda   a KEDA ScaledObject with a Prometheus trigger (KEDA makes and owns the HPA itself)

One of the two per Deployment, as the model's ``autoscaling.autoscaler`` says: installed together
they are two HPAs writing one Deployment's scale. Both target an average of one unit of the gauge
per replica, so the desired count is ceil(gauge / 1) whatever the current count: the number the
gateway computes is the number the autoscaler sets, within [floor, max_replicas]."""

from __future__ import annotations

import math
from typing import Any

from gateway.deploy.plan import LABEL_MODEL, LABEL_VARIANT, DeployPlan, VariantDeployment
from gateway.scaling import Autoscaling

METRIC = "duet_desired_replicas"
# The Prometheus the base's ServiceMonitors feed: kube-prometheus-stack installed in namespace
# `monitoring`, whose operator gives every Prometheus it runs the Service `prometheus-operated`.
PROMETHEUS_SERVICE = "http://prometheus-operated.monitoring.svc"
PROMETHEUS_PORT = 9090
ADAPTER_CHART = "prometheus-community/prometheus-adapter"


def _meta(d: VariantDeployment) -> dict[str, Any]:
    return {"name": d.name, "labels": {LABEL_MODEL: d.model, LABEL_VARIANT: d.variant}}


def _target(d: VariantDeployment) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": d.name}


def _behavior(settings: Autoscaling) -> dict[str, Any]:
    """Up to the lowest count asked for over the scale-up window (0: at once), by at most
    ``scale_up_pods`` per ``scale_up_period_s`` when set; down only to the highest count asked for
    over the scale-down window."""
    up: dict[str, Any] = {"stabilizationWindowSeconds": math.ceil(settings.scale_up_stabilization_s)}
    if settings.scale_up_pods is not None:
        up["policies"] = [{"type": "Pods", "value": settings.scale_up_pods,
                           "periodSeconds": math.ceil(settings.scale_up_period_s)}]
    return {"scaleUp": up, "scaleDown": {"stabilizationWindowSeconds": math.ceil(settings.scale_down_stabilization_s)}}


def _settings(d: VariantDeployment) -> Autoscaling:
    if d.autoscaling is None:
        raise ValueError(f"{d.name} is not autoscaled")
    return d.autoscaling


def hpa(d: VariantDeployment) -> dict[str, Any]:
    """The variant's HPA on the gauge (External metric, selected by its model and variant)."""
    settings = _settings(d)
    # A plain HPA cannot go below one replica (minReplicas 0 needs the alpha HPAScaleToZero
    # feature gate): a variant with no floor keeps one; KEDA can take it to zero.
    low = max(1, d.floor)
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": _meta(d),
        "spec": {"scaleTargetRef": _target(d), "minReplicas": low, "maxReplicas": max(settings.max_replicas, low),
                 "metrics": [{"type": "External", "external": {
                     "metric": {"name": METRIC, "selector": {"matchLabels": {"model": d.model, "variant": d.variant}}},
                     "target": {"type": "AverageValue", "averageValue": "1"}}}],
                 "behavior": _behavior(settings)},
    }


def scaled_object(d: VariantDeployment, namespace: str) -> dict[str, Any]:
    """The variant's KEDA ScaledObject: a Prometheus trigger on the gauge of the gateways in
    ``namespace``, down to the floor (zero where nothing holds the variant up)."""
    settings = _settings(d)
    query = f'max({METRIC}{{namespace="{namespace}",model="{d.model}",variant="{d.variant}"}})'
    return {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": _meta(d),
        "spec": {
            "scaleTargetRef": _target(d),
            "minReplicaCount": d.floor, "maxReplicaCount": max(settings.max_replicas, d.floor),
            "pollingInterval": math.ceil(settings.scrape_interval_s),
            # KEDA's own wait before the last replica goes (1 -> 0); the HPA's window rules the rest.
            "cooldownPeriod": math.ceil(settings.scale_down_stabilization_s),
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": _behavior(settings)}},
            "triggers": [{"type": "prometheus", "metricType": "AverageValue", "metadata": {
                "serverAddress": f"{PROMETHEUS_SERVICE}:{PROMETHEUS_PORT}", "query": query, "threshold": "1",
                # No series (the gateways not scraped) is an error, which keeps the count, rather
                # than a zero, which would take the variant to its floor.
                "ignoreNullValues": "false"}}],
        },
    }


def autoscaler_objects(plan: DeployPlan, namespace: str) -> list[dict[str, Any]]:
    """One HPA or one ScaledObject per autoscaled variant, as its model chose; none for the rest."""
    return [hpa(d) if d.autoscaling.autoscaler == "hpa" else scaled_object(d, namespace)
            for d in plan.variants if d.autoscaling is not None]


def adapter_values(plan: DeployPlan) -> dict[str, Any] | None:
    """Helm values for prometheus-adapter (``ADAPTER_CHART``) serving the gauge on the external
    metrics API, or None when no variant is scaled by an HPA. Every gateway replica reports the
    same value, so the query takes the max over them; the namespace is the HPA's own."""
    if not any(d.autoscaling is not None and d.autoscaling.autoscaler == "hpa" for d in plan.variants):
        return None
    rule = {
        "seriesQuery": f'{METRIC}{{namespace!="",model!="",variant!=""}}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
        "name": {"matches": f"^{METRIC}$", "as": METRIC},
        "metricsQuery": "max by (model, variant) (<<.Series>>{<<.LabelMatchers>>})",
    }
    return {"prometheus": {"url": PROMETHEUS_SERVICE, "port": PROMETHEUS_PORT}, "rules": {"external": [rule]}}
