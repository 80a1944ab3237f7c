"""The Kubernetes base, the same for every config and device: the gateway (Deployment, Service,
HPA, PodDisruptionBudget), its service account allowed to read EndpointSlices (discovery), and
Prometheus Operator objects (ServiceMonitors for the gateway and vLLM, the SLO PrometheusRule).
The config, the replicas and Redis come from the overlay."""

from __future__ import annotations

from typing import Any

from gateway.deploy.gateway_config import GATEWAY_PORT
from gateway.deploy.plan import LABEL_MODEL, LABEL_VARIANT
from gateway.deploy.rules import rule_groups

GATEWAY = "duet-gateway"
GATEWAY_LABELS = {"app.kubernetes.io/name": GATEWAY}
DRAIN_S = 30  # server.drain_timeout_s: streams in progress get this long after SIGTERM


def _meta(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {**GATEWAY_LABELS, **(labels or {})}}


def _probe(path: str, period_s: int, failures: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": "http"}, "periodSeconds": period_s, "failureThreshold": failures,
            "timeoutSeconds": 2}


def gateway_container(image: str) -> dict[str, Any]:
    """``duet serve`` with the ConfigMap's config, Redis from the Secret, /ready gating traffic."""
    return {
        "name": "gateway", "image": image, "imagePullPolicy": "IfNotPresent",
        "args": ["serve", "--config", "/etc/duet/duet.yaml", "--host", "0.0.0.0", "--port", str(GATEWAY_PORT),
                 "--state", "$(DUET_REDIS_URL)"],
        "env": [
            {"name": "DUET_REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "duet-secrets", "key": "redis-url"}}},
            # Admin routes (keys, usage) stay off until this Secret exists.
            {"name": "DUET_ADMIN_KEY",
             "valueFrom": {"secretKeyRef": {"name": "duet-admin", "key": "admin-key", "optional": True}}},
        ],
        "ports": [{"name": "http", "containerPort": GATEWAY_PORT}],
        "readinessProbe": _probe("/ready", 5, 2),
        "livenessProbe": _probe("/health", 10, 3),
        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/duet", "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }


def gateway_deployment(image: str) -> dict[str, Any]:
    spec = {
        "serviceAccountName": GATEWAY, "terminationGracePeriodSeconds": DRAIN_S + 5,
        "containers": [gateway_container(image)],
        "volumes": [{"name": "config", "configMap": {"name": "duet-config"}}, {"name": "tmp", "emptyDir": {}}],
        # Two gateways on one node fall together; spread them.
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                       "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": GATEWAY_LABELS}}],
    }
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(GATEWAY),
        "spec": {"replicas": 2, "selector": {"matchLabels": GATEWAY_LABELS},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                 "template": {"metadata": {"labels": GATEWAY_LABELS}, "spec": spec}},
    }


def gateway_objects(image: str) -> list[dict[str, Any]]:
    """Deployment, Service, HPA (2 to 8 on CPU) and a PDB keeping one gateway through disruptions."""
    return [
        gateway_deployment(image),
        {"apiVersion": "v1", "kind": "Service", "metadata": _meta(GATEWAY),
         "spec": {"selector": GATEWAY_LABELS, "ports": [{"name": "http", "port": GATEWAY_PORT, "targetPort": "http"}]}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": _meta(GATEWAY),
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": GATEWAY},
                  "minReplicas": 2, "maxReplicas": 8,
                  "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                                                 "target": {"type": "Utilization", "averageUtilization": 70}}}]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(GATEWAY),
         "spec": {"minAvailable": 1, "selector": {"matchLabels": GATEWAY_LABELS}}},
    ]


def rbac_objects() -> list[dict[str, Any]]:
    """The gateway's service account may list and watch EndpointSlices in its namespace, nothing else."""
    role = "duet-discovery"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(GATEWAY)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(role),
         "rules": [{"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(role),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
         "subjects": [{"kind": "ServiceAccount", "name": GATEWAY}]},
    ]


def _relabel(label: str, target: str) -> dict[str, Any]:
    source = "__meta_kubernetes_service_label_" + label.replace(".", "_").replace("/", "_")
    return {"sourceLabels": [source], "targetLabel": target, "action": "replace"}


def monitoring_objects() -> list[dict[str, Any]]:
    """ServiceMonitors (vLLM series get the gateway's ``model``/``variant`` labels) and the rules."""
    vllm = {"app.kubernetes.io/name": "vllm"}
    return [
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": _meta(GATEWAY),
         "spec": {"selector": {"matchLabels": GATEWAY_LABELS},
                  "endpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": _meta("duet-vllm"),
         "spec": {"selector": {"matchLabels": vllm},
                  "endpoints": [{"port": "http", "path": "/metrics", "interval": "15s",
                                 "relabelings": [_relabel(LABEL_MODEL, "model"), _relabel(LABEL_VARIANT, "variant")]}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": _meta("duet-slo"),
         "spec": {"groups": rule_groups()}},
    ]


def base_files(image: str) -> dict[str, list[dict[str, Any]] | dict[str, Any]]:
    """File name -> objects (a list is one multi-document YAML file)."""
    return {
        "kustomization.yaml": {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                               "resources": ["gateway.yaml", "rbac.yaml", "monitoring.yaml"],
                               # Grafana's dashboard sidecar (kube-prometheus-stack) loads ConfigMaps with this label.
                               "configMapGenerator": [{"name": "duet-dashboard", "files": ["duet.json"],
                                                       "options": {"labels": {"grafana_dashboard": "1"}}}]},
        "gateway.yaml": gateway_objects(image),
        "rbac.yaml": rbac_objects(),
        "monitoring.yaml": monitoring_objects(),
    }
