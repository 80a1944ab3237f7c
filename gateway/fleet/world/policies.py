"""The policies a benchmark compares: Duet configs built from a policy file's ``routing`` section
over a replica set (``replica_sets.py``), or LiteLLM's proxy over the same replicas.

A compressed run (``time_scale`` T: simulated replicas T times faster than real) divides every
time the gateway reasons with by T — task budgets and speed priors — so its decisions are those
it would make in real time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gateway.fleet.world.prior_error import PriorError
from gateway.fleet.world.replica_sets import ReplicaSet, VariantSpec
from serving.sim.fidelity.prior import speed_prior

POLICY_DIR = Path(__file__).resolve().parent / "policies"
DUET_POLICIES = ("always-standard", "always-fast", "round-robin", "least-loaded", "static-split", "llm-d-default",
                 "production-stack-prefixaware", "duet")
LITELLM_POLICY = "litellm-latency"
ALL_POLICIES = (*DUET_POLICIES[:-1], LITELLM_POLICY, DUET_POLICIES[-1])


def policy_path(name_or_path: str) -> Path:
    """A shipped policy by name (``duet``, ``least-loaded``, ...) or a path to a Duet config."""
    shipped = POLICY_DIR / f"{name_or_path}.yaml"
    return shipped if shipped.exists() else Path(name_or_path)


def policy_name(name_or_path: str) -> str:
    return name_or_path if name_or_path == LITELLM_POLICY else policy_path(name_or_path).stem


def policy_state(policy: str) -> dict[str, Any]:
    """The ``state`` settings a policy file brings as part of what it copies (llm-d's 50 ms
    metrics refresh), in model seconds; {} for the rest, which run with the gateway's defaults."""
    return dict(yaml.safe_load(policy_path(policy).read_text()).get("state") or {})


def _speed(variant: VariantSpec, time_scale: float) -> dict[str, Any]:
    """The Duet speed prior of a variant's simulator profile, in wall time at ``time_scale``."""
    return speed_prior(variant.sim_profile(), time_scale)


def _engine(variant: VariantSpec) -> dict[str, Any]:
    """The variant's engine section, when its chunk budget is not its profile's (what its
    operator configured, so the gateway's latency model chunks prompts as the replicas do)."""
    chunk = variant.max_num_batched_tokens
    return {} if chunk is None else {"engine": {"max_num_batched_tokens": chunk}}


def _scaled_tasks(tasks: Mapping[str, Any], time_scale: float) -> dict[str, Any]:
    timed = ("ttft_ms", "latency_ms", "tpot_ms")
    return {name: {k: (v / time_scale if k in timed else v) for k, v in spec.items()} for name, spec in tasks.items()}


def duet_config(replica_set: ReplicaSet, urls: Mapping[str, list[str]], policy: str, time_scale: float,
                prior_error: PriorError | None = None) -> dict[str, Any]:
    """A Duet config: ``replica_set``'s variants at ``urls`` (variant -> replica URLs), routed by the
    ``routing`` section of ``policy`` (a shipped name or a config path), with each variant's speed
    prior its simulator profile's off by ``prior_error`` (None: the profile's own, an oracle no
    real gateway has; for tools that measure routing cost, not routing quality)."""
    error = prior_error or PriorError({})
    routing = yaml.safe_load(policy_path(policy).read_text())["routing"]
    routing = {**routing, "tasks": _scaled_tasks(routing["tasks"], time_scale)}
    variants = {
        v.name: {
            "kind": v.kind,
            "served_model_name": replica_set.served_name(v.name),
            "max_model_len": replica_set.max_context,
            "tools": True,
            "price": {"input_per_mtok": v.price.input_per_mtok, "output_per_mtok": v.price.output_per_mtok},
            "speed": error.apply(_speed(v, time_scale), v.name),
            "launch_profile": v.profile,
            "replicas": [{"url": url} for url in urls[v.name]],
            **_engine(v),
            **({} if v.allowed_tasks is None else {"allowed_tasks": list(v.allowed_tasks)}),
        }
        for v in replica_set.variants
    }
    return {
        "server": {"host": "127.0.0.1", "port": 0, "upstream_idle_timeout_s": 600.0},
        "models": {replica_set.model: {"tokenizer": "approx", "variants": variants}},
        "routing": routing,
        # Scrape replicas' queues often: at a compressed time scale a second is a long time. A
        # policy's own intervals (model time) are scaled like its budgets.
        "state": {"health_interval_s": 0.5, "scrape_interval_s": 0.25, "stale_after_s": 5.0,
                  **{k: v / time_scale if k.endswith("_s") else v for k, v in policy_state(policy).items()}},
    }


def litellm_config(replica_set: ReplicaSet, urls: Mapping[str, list[str]], api_key: str) -> dict[str, Any]:
    """LiteLLM proxy: one model name over every replica of every variant, latency-based routing."""
    deployments = [
        {"model_name": replica_set.model,
         "litellm_params": {"model": f"openai/{replica_set.served_name(variant)}", "api_base": f"{url}/v1",
                            "api_key": "sk-bench"}}
        for variant, variant_urls in urls.items() for url in variant_urls
    ]
    return {
        "model_list": deployments,
        "router_settings": {"routing_strategy": "latency-based-routing"},
        "litellm_settings": {"set_verbose": False, "json_logs": False, "turn_off_message_logging": True,
                             "callbacks": [], "success_callback": [], "failure_callback": []},
        "general_settings": {"master_key": api_key, "disable_spend_logs": True, "disable_error_logs": True},
    }
