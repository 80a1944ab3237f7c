"""The duet.yaml a deployed gateway runs with: the written config, with replicas where the
deployment puts them and state shared through Redis (several gateways, one view of the replicas)."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from gateway.deploy.plan import LABEL_VARIANT, DeployPlan, pool_name
from gateway.deploy.profiles import VLLM_PORT

GATEWAY_PORT = 8000
COMPOSE_REDIS_URL = "redis://redis:6379/0"
K8S_REDIS_URL = "redis://duet-redis:6379/0"

HEADER = ("# Rendered by `duet deploy render --target {target}{flags}` from {source}: edit that file and render\n"
          "# again rather than this one.\n")


def _own_engine(written: list[dict[str, Any]], index: int) -> dict[str, Any]:
    """The ``engine`` block the config wrote for replica ``index``, if any."""
    return {"engine": written[index]["engine"]} if index < len(written) and "engine" in written[index] else {}


def deployed_config(plan: DeployPlan, source: str) -> str:
    """The gateway's duet.yaml for ``plan``'s platform, as YAML text."""
    raw = copy.deepcopy(plan.raw)
    raw["server"] = {**raw.get("server", {}), "host": "0.0.0.0", "port": GATEWAY_PORT}
    k8s = plan.target.platform == "k8s"
    state = raw.setdefault("state", {})
    state.update(store="redis", redis_url=COMPOSE_REDIS_URL if plan.target.platform == "compose" else K8S_REDIS_URL)
    for model, section in raw["models"].items():
        section.pop("inference_pool", None)
        if plan.target.platform == "gie":  # the pool lists the replicas, its pods' label names the variant
            section["inference_pool"] = {"name": pool_name(plan, model), "variant_label": LABEL_VARIANT}
    for deployment in plan.variants:
        section = raw["models"][deployment.model]["variants"][deployment.variant]
        written = section.pop("replicas", None) or []
        section.pop("discovery", None)
        if plan.target.platform == "gie":
            continue
        if k8s:
            section["discovery"] = {"kubernetes": {"label_selector": deployment.label_selector, "port": VLLM_PORT}}
        else:  # replica i is the service the plan starts with replica i's engine: it keeps that engine
            section["replicas"] = [{"url": f"http://{deployment.name}-{i}:{VLLM_PORT}", **_own_engine(written, i)}
                                   for i in range(deployment.replicas)]
    body: str = yaml.safe_dump(raw, sort_keys=False, default_flow_style=None, width=120)
    flags = "" if plan.autoscaler is None else f" --autoscaler {plan.autoscaler}"
    return HEADER.format(target=plan.target.name, flags=flags, source=source) + body
