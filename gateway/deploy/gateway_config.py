"""The duet.yaml a deployed gateway runs with: the written config, with replicas where the
deployment puts them and state shared through Redis (several gateways, one view of the replicas)."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from gateway.deploy.plan import LABEL_MODEL, LABEL_VARIANT, DeployPlan, VariantDeployment, pool_name
from gateway.deploy.profiles import VLLM_PORT
from serving.launch.roles import EngineSettings

GATEWAY_PORT = 8000
COMPOSE_REDIS_URL = "redis://redis:6379/0"
K8S_REDIS_URL = "redis://duet-redis:6379/0"

HEADER = ("# Rendered by `duet deploy render --target {target}{flags}` from {source}: edit that file and render\n"
          "# again rather than this one.\n")


def _replica_engine(d: VariantDeployment, section: dict[str, Any], written: list[dict[str, Any]],
                    index: int) -> dict[str, Any]:
    """The ``engine`` block replica ``index`` runs, if it is its own: the one the config wrote
    for it, or its engine group's (the groups then say no more)."""
    if section.get("engine_groups"):
        return {"engine": engine_section(d.engine_at(index))}
    return {"engine": written[index]["engine"]} if index < len(written) and "engine" in written[index] else {}


def _engines_by_group(d: VariantDeployment, section: dict[str, Any]) -> bool:
    """Writes the variant's engines as the Kubernetes pods run them: one group, as the variant's
    ``engine`` (untouched when it is already); several, as ``engine_groups`` (the pods' group
    labels name them). Returns whether there are several."""
    groups = d.groups
    if len(groups) == 1:
        section.pop("engine_groups", None)
        if groups[0].engine != d.engine:  # the listed replicas' or the one group's own
            section["engine"] = engine_section(groups[0].engine)
        return False
    section.pop("engine", None)
    section["engine_groups"] = [{"count": g.count, "engine": engine_section(g.engine)} for g in groups]
    return True


def engine_section(engine: EngineSettings) -> dict[str, Any]:
    """``engine`` as a duet.yaml ``engine`` block: the fields it sets (``role`` unless ``both``)."""
    fields = {"role": None if engine.role == "both" else engine.role,
              "max_num_batched_tokens": engine.max_num_batched_tokens, "max_num_seqs": engine.max_num_seqs,
              "kv_connector": engine.kv_connector, "tensor_parallel_size": engine.tensor_parallel_size}
    return {key: value for key, value in fields.items() if value is not None}


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
        if plan.target.platform == "compose":  # replica i is the service started with replica i's engine
            section["replicas"] = [{"url": f"http://{deployment.name}-{i}:{VLLM_PORT}", **_replica_engine(
                deployment, section, written, i)} for i in range(deployment.replicas)]
            section.pop("engine_groups", None)
            continue
        grouped = _engines_by_group(deployment, section)
        if k8s:
            # A variant of several groups is found group by group (each group's headless Service),
            # so that each pod gets its group's engine; the variant's own selector would find them all.
            selector = f"{LABEL_MODEL}={deployment.model},{LABEL_VARIANT}={deployment.variant}"
            section["discovery"] = {"kubernetes": {"label_selector": selector if grouped else deployment.label_selector,
                                                   "port": VLLM_PORT}}
    body: str = yaml.safe_dump(raw, sort_keys=False, default_flow_style=None, width=120)
    flags = "" if plan.autoscaler is None else f" --autoscaler {plan.autoscaler}"
    return HEADER.format(target=plan.target.name, flags=flags, source=source) + body
