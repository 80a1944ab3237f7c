"""``--target gie``: Duet as the endpoint picker of an existing Gateway API Inference Extension
gateway (GIE v1.0, ``inference.networking.k8s.io/v1``) rather than its own proxy.

    inferencepool.yaml   one InferencePool per model: its vLLM pods (``duet.dev/model``), port
                         8000, the picker ``duet-epp`` (fail closed)
    epp.yaml             ``duet epp``: ServiceAccount, Role (read pods and inferencepools),
                         RoleBinding, Deployment (gRPC health probes), Service (ext_proc on 9002, h2c)
    httproute.yaml       an HTTPRoute on the platform's Gateway whose backendRef is the pool
    monitoring.yaml      ServiceMonitors for the picker's duet_* metrics and for vLLM
    + the k8s overlay's parts: namespace, Secret, Redis, the vLLM Deployments (each pod labelled
      with its variant, which the picker reads), their autoscaling, the models' claim

One picker serves every model of the config; each model's pool names it.
"""

from __future__ import annotations

from typing import Any

from gateway.deploy.k8s_base import monitoring_objects
from gateway.deploy.k8s_overlay import NAMESPACE, overlay_files
from gateway.deploy.plan import LABEL_MODEL, DeployPlan, pool_name
from gateway.deploy.profiles import VLLM_PORT

EPP = "duet-epp"
EPP_LABELS = {"app.kubernetes.io/name": EPP}
EPP_PORT = 9002  # GIE's default for the picker's ext_proc (and, here, its gRPC health)
METRICS_PORT = 9090
GATEWAY_NAME = "inference-gateway"
# The HTTPRoute header GIE's body-based router sets from the request's model: with several pools
# behind one route, it picks the pool (one model needs no match).
MODEL_HEADER = "X-Gateway-Model-Name"
REQUEST_TIMEOUT = "300s"  # a long generation must not hit the route's default timeout
DRAIN_S = 30


def _meta(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {**EPP_LABELS, **(labels or {})}}


def inference_pool(plan: DeployPlan, model: str) -> dict[str, Any]:
    return {
        "apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
        "metadata": {"name": pool_name(plan, model), "labels": {LABEL_MODEL: model}},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "vllm", LABEL_MODEL: model}},
                 "targetPorts": [{"number": VLLM_PORT}],
                 "endpointPickerRef": {"kind": "Service", "name": EPP, "port": {"number": EPP_PORT},
                                       "failureMode": "FailClose"}},
    }


def _grpc_probe(service: str, period_s: int, failures: int) -> dict[str, Any]:
    return {"grpc": {"port": EPP_PORT, "service": service}, "periodSeconds": period_s, "failureThreshold": failures}


def epp_container(image: str) -> dict[str, Any]:
    """``duet epp`` with the ConfigMap's config, Redis from the Secret, readiness on gRPC health."""
    return {
        "name": "epp", "image": image, "imagePullPolicy": "IfNotPresent",
        "args": ["epp", "--config", "/etc/duet/duet.yaml", "--host", "0.0.0.0", "--port", str(EPP_PORT),
                 "--metrics-port", str(METRICS_PORT), "--state", "$(DUET_REDIS_URL)"],
        "env": [{"name": "DUET_REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "duet-secrets", "key": "redis-url"}}}],
        "ports": [{"name": "grpc", "containerPort": EPP_PORT}, {"name": "metrics", "containerPort": METRICS_PORT}],
        "readinessProbe": _grpc_probe("readiness", 5, 2),
        "livenessProbe": _grpc_probe("liveness", 10, 3),
        "resources": {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/duet", "readOnly": True}, {"name": "tmp", "mountPath": "/tmp"}],
    }


def epp_objects(image: str) -> list[dict[str, Any]]:
    """The picker, its Service and what its service account may read: pods and inferencepools."""
    pod = {"serviceAccountName": EPP, "terminationGracePeriodSeconds": DRAIN_S + 5, "containers": [epp_container(image)],
           "volumes": [{"name": "config", "configMap": {"name": "duet-config"}}, {"name": "tmp", "emptyDir": {}}]}
    read = ["get", "list", "watch"]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(EPP)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(EPP),
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": read},
                   {"apiGroups": ["inference.networking.k8s.io"], "resources": ["inferencepools"], "verbs": read}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(EPP),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": EPP},
         "subjects": [{"kind": "ServiceAccount", "name": EPP}]},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(EPP),
         "spec": {"replicas": 2, "selector": {"matchLabels": EPP_LABELS},
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                  "template": {"metadata": {"labels": EPP_LABELS}, "spec": pod}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": _meta(EPP),
         "spec": {"selector": EPP_LABELS, "ports": [
             {"name": "grpc-ext-proc", "port": EPP_PORT, "targetPort": "grpc", "appProtocol": "kubernetes.io/h2c"},
             {"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics"}]}},
    ]


def http_route(plan: DeployPlan, gateway_name: str) -> dict[str, Any]:
    """One rule per model's pool; with several, each matches the model header."""
    models = list(plan.raw["models"])
    rules = []
    for model in models:
        match: dict[str, Any] = {"path": {"type": "PathPrefix", "value": "/"}}
        if len(models) > 1:
            match["headers"] = [{"type": "Exact", "name": MODEL_HEADER, "value": model}]
        rules.append({"matches": [match], "timeouts": {"request": REQUEST_TIMEOUT},
                      "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                       "name": pool_name(plan, model)}]})
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "duet"},
            "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway_name}],
                     "rules": rules}}


def epp_monitoring() -> list[dict[str, Any]]:
    """The picker's metrics (duet_desired_replicas among them, what the autoscalers read) and vLLM's."""
    vllm = [obj for obj in monitoring_objects() if obj["metadata"]["name"] == "duet-vllm"]
    return [{"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": _meta(EPP),
             "spec": {"selector": {"matchLabels": EPP_LABELS},
                      "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "15s"}]}}, *vllm]


def gie_files(plan: DeployPlan, image: str, redis_url: str | None,
              gateway_name: str | None = None) -> dict[str, list[dict[str, Any]] | dict[str, Any]]:
    """File name -> objects, a kustomization over them all (the overlay's parts without the proxy)."""
    files = {name: objs for name, objs in overlay_files(plan, redis_url).items() if name != "kustomization.yaml"}
    files["inferencepool.yaml"] = [inference_pool(plan, model) for model in plan.raw["models"]]
    files["epp.yaml"] = epp_objects(image)
    files["httproute.yaml"] = http_route(plan, gateway_name or GATEWAY_NAME)
    files["monitoring.yaml"] = epp_monitoring()
    files["kustomization.yaml"] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": NAMESPACE,
        "resources": sorted(files),
        "configMapGenerator": [{"name": "duet-config", "files": ["duet.yaml"]}],  # hashed: a change rolls the pickers
        "labels": [{"pairs": {"app.kubernetes.io/part-of": "duet"}}],
    }
    return files
