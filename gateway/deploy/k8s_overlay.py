"""A Kubernetes overlay (``gpu`` or ``cpu``) for one config: the gateway's ConfigMap, the Secret,
Redis (or an external URL), per variant a vLLM Deployment and Service labelled
``duet.dev/model``/``duet.dev/variant`` (the labels the gateway's discovery selects on; a variant
of several engines: a Deployment and a headless Service per engine group, labelled
``duet.dev/engine-group`` too), and for an autoscaled variant its HPA or KEDA ScaledObject
(``autoscaling.py``)."""

from __future__ import annotations

from typing import Any

from gateway.config.engine_groups import GROUP_LABEL
from gateway.deploy.autoscaling import autoscaler_objects
from gateway.deploy.gateway_config import K8S_REDIS_URL
from gateway.deploy.plan import LABEL_MODEL, LABEL_VARIANT, DeployPlan, VariantDeployment
from gateway.deploy.profiles import VLLM_PORT, vllm_args
from serving.launch.roles import EngineSettings, with_engine

NAMESPACE = "duet"
MODELS_PVC = "duet-models"
# The kind cluster maps this host folder into its node (docs/deploy.md): `make local-model` output.
CPU_MODELS_HOST_PATH = "/var/lib/duet/models"
API_SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
NIXL = "NixlConnector"
# vLLM's default VLLM_NIXL_SIDE_CHANNEL_PORT, where a NIXL replica answers its peers' handshakes.
NIXL_SIDE_CHANNEL_PORT = 5600


def _http_probe(period_s: int, failures: int, timeout_s: int = 5) -> dict[str, Any]:
    return {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": period_s,
            "failureThreshold": failures, "timeoutSeconds": timeout_s}


def vllm_container(d: VariantDeployment, engine: EngineSettings | None = None) -> dict[str, Any]:
    """The replica: the profile's arguments with ``engine`` applied (None: replica 0's, a variant
    with one engine group), /health gating traffic, a generous startup probe (a 70B checkpoint
    takes minutes to load; torch.compile on CPU ~60 s)."""
    engine = d.engine_at(0) if engine is None else engine
    profile = with_engine(d.profile, engine)
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in profile.env]
    ports = [{"name": "http", "containerPort": VLLM_PORT}]
    if engine.kv_connector == NIXL:
        # The prefill side names this host in the kv_transfer_params it answers with, and the
        # decode side connects to it: vLLM's default (localhost) is no other pod's way in.
        env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}})
        ports.append({"name": "nixl", "containerPort": NIXL_SIDE_CHANNEL_PORT})
    if profile.device == "gpu":
        env += [{"name": "HF_HOME", "value": "/models/hf"},
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}}]
        resources = {"requests": {"cpu": profile.cpu, "memory": profile.memory, "nvidia.com/gpu": str(profile.gpus)},
                     "limits": {"nvidia.com/gpu": str(profile.gpus)}}
    else:
        # Guaranteed QoS with whole cores: the kubelet's static CPU manager then pins the replica.
        resources = {"requests": {"cpu": profile.cpu, "memory": profile.memory},
                     "limits": {"cpu": profile.cpu, "memory": profile.memory}}
    mounts = [{"name": "models", "mountPath": "/models", "readOnly": profile.device == "cpu"},
              {"name": "dshm", "mountPath": "/dev/shm"}]
    return {
        "name": "vllm", "image": profile.image, "imagePullPolicy": "IfNotPresent",
        "command": API_SERVER, "args": vllm_args(profile, d.served_model_name, d.max_model_len),
        "env": env, "ports": ports,
        "startupProbe": _http_probe(10, 180), "readinessProbe": _http_probe(5, 3), "livenessProbe": _http_probe(15, 4),
        "resources": resources, "volumeMounts": mounts,
    }


def _models_volume(device: str) -> dict[str, Any]:
    if device == "gpu":
        return {"name": "models", "persistentVolumeClaim": {"claimName": MODELS_PVC}}
    return {"name": "models", "hostPath": {"path": CPU_MODELS_HOST_PATH, "type": "Directory"}}


def vllm_objects(d: VariantDeployment) -> list[dict[str, Any]]:
    """The variant's Deployment and Service (whose labels its EndpointSlices inherit); a variant
    whose replicas run several engines gets one Deployment per engine group instead, each with a
    headless Service labelled with its group, which the gateway's discovery selects to know each
    pod's engine. The variant's Service selects every group's pods (what Prometheus scrapes)."""
    groups = d.groups
    if len(groups) == 1:
        return [_deployment(d, d.name, d.selector, None, d.replicas), _service(d.name, d.selector, d.selector)]
    objects = []
    for group in groups:
        name, selector = d.group_deployment(group), {**d.selector, GROUP_LABEL: group.name}
        objects.append(_deployment(d, name, selector, group.engine, group.count))
        # Not labelled app.kubernetes.io/name=vllm: the vLLM ServiceMonitor scrapes through the
        # variant's Service, and a second Service over the same pod would scrape it twice.
        labels = {LABEL_MODEL: d.model, LABEL_VARIANT: d.variant, GROUP_LABEL: group.name}
        objects.append(_service(name, labels, selector, headless=True))
    return [*objects, _service(d.name, d.selector, d.selector)]


def _service(name: str, labels: dict[str, str], selector: dict[str, str], headless: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": selector, "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": "http"}]}
    if headless:  # only its endpoints are read: no cluster IP needed
        spec = {"clusterIP": "None", **spec}
    metadata = {"name": name, "labels": {**labels, "app.kubernetes.io/part-of": "duet"}}
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def _deployment(d: VariantDeployment, name: str, selector: dict[str, str], engine: EngineSettings | None,
                replicas: int) -> dict[str, Any]:
    """``replicas`` pods labelled ``selector`` running ``engine`` (None: the variant's one)."""
    labels = {**selector, "app.kubernetes.io/part-of": "duet"}
    pod: dict[str, Any] = {
        "containers": [vllm_container(d, engine)],
        "volumes": [_models_volume(d.profile.device), {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}],
        "terminationGracePeriodSeconds": 60,
    }
    if d.profile.device == "gpu":
        pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    spec: dict[str, Any] = {"selector": {"matchLabels": selector}, "template": {"metadata": {"labels": labels}, "spec": pod}}
    # Autoscaled: no spec.replicas, the autoscaler owns the count. Were it in the manifest, every
    # `kubectl apply` would set the count back to it; left out, a new Deployment starts at the
    # API's default of one and the autoscaler takes it from there. A Deployment applied before
    # with spec.replicas keeps it in its last-applied annotation, so the first client-side apply
    # without it drops to one replica: docs/deploy.md says how to hand the field over first.
    if d.autoscaling is None:
        spec = {"replicas": replicas, **spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels}, "spec": spec}


def redis_objects() -> list[dict[str, Any]]:
    """One Redis with append-only persistence on a volume claim (quotas and the ledger survive restarts)."""
    labels = {"app.kubernetes.io/name": "duet-redis"}
    probe = {"exec": {"command": ["redis-cli", "ping"]}, "periodSeconds": 5}
    container = {
        "name": "redis", "image": "redis:7.2", "args": ["--appendonly", "yes", "--save", "60", "1"],
        "ports": [{"name": "redis", "containerPort": 6379}], "readinessProbe": probe, "livenessProbe": probe,
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    return [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "duet-redis", "labels": labels},
         "spec": {"serviceName": "duet-redis", "replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
                  "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                      "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "duet-redis", "labels": labels},
         "spec": {"selector": labels, "ports": [{"name": "redis", "port": 6379, "targetPort": "redis"}]}},
    ]


def overlay_files(plan: DeployPlan, redis_url: str | None) -> dict[str, list[dict[str, Any]] | dict[str, Any]]:
    """File name -> objects. ``redis_url``: an external Redis; None deploys one here."""
    device = plan.target.device
    files: dict[str, list[dict[str, Any]] | dict[str, Any]] = {
        "namespace.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        "secret.yaml": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "duet-secrets"}, "type": "Opaque",
                        "stringData": {"redis-url": redis_url or K8S_REDIS_URL}},
        "vllm.yaml": [obj for d in plan.variants for obj in vllm_objects(d)],
    }
    if redis_url is None:
        files["redis.yaml"] = redis_objects()
    if scalers := autoscaler_objects(plan, NAMESPACE):
        files["autoscaling.yaml"] = scalers
    if device == "gpu":
        files["models.yaml"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": MODELS_PVC},
                                "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "500Gi"}}}}
    resources = ["../../base", *sorted(name for name in files)]
    files["kustomization.yaml"] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": NAMESPACE,
        "resources": resources,
        # A hashed name: a config change rolls the gateways (kustomize rewrites the reference).
        "configMapGenerator": [{"name": "duet-config", "files": ["duet.yaml"]}],
        "labels": [{"pairs": {"app.kubernetes.io/part-of": "duet"}}],
    }
    return files
