"""A plan's fleet written into a Duet config: each variant's ``replica_count``, the number of
replicas ``duet deploy render`` starts for it (gateway/deploy/plan.py), its layout (the engine's
``tensor_parallel_size`` and ``max_num_batched_tokens``, and a ``replica_cost``'s GPUs to match),
the engine groups its role mix lays over the replicas (``engine_groups``, with the split rule and
the ``engine-role`` filter when some replicas only prefill), and, when the model autoscales
(``autoscaling`` present), the utilisation the fleet ran at per variant
(``autoscaling.utilisation_by_variant``), so that the gauge asks for this fleet at this traffic.
The rest of the file is kept as written; the result must load as the gateway loads it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from gateway.fleet.capacity.roles import ROLE_MIXES
from gateway.fleet.replay.policy_names import parse_policy_name
from gateway.flow import EngineRole, parse_config

# The filter that keeps clients' whole requests off prefill-only replicas (its registered type).
ENGINE_ROLE = "engine-role"
HEADER = "# Replica counts (replica_count), engines and autoscaling utilisation written by `{command}`.\n"


def variants_of(raw: Mapping[str, Any], model: str | None) -> tuple[str, dict[str, Any]]:
    """The model named ``model`` (None: the config's only one) and its variants section.
    Raises ValueError naming the config path."""
    models = raw.get("models") if isinstance(raw, Mapping) else None
    if not isinstance(models, dict) or not models:
        raise ValueError("models: the config has no models")
    if model is None:
        if len(models) != 1:
            raise ValueError(f"models: {len(models)} models ({', '.join(models)}); name one with --model")
        (model,) = models
    if model not in models:
        raise ValueError(f"models.{model}: not in the config (models: {', '.join(models)})")
    variants = models[model].get("variants") if isinstance(models[model], dict) else None
    if not isinstance(variants, dict):
        raise ValueError(f"models.{model}.variants: missing")
    return model, variants


def check(text: str, source: str, profiles: Mapping[str, str], model: str | None = None) -> str:
    """Checks that the config at ``source`` loads and has each variant the plan sizes, launched
    from the profile it was sized with (``profiles``: variant -> profile); returns the model's
    name. Raises ValueError naming the config path (before any replay)."""
    parse_config(text, source=source)
    name, variants = variants_of(yaml.safe_load(text), model)
    if missing := [v for v in profiles if v not in variants]:
        raise ValueError(f"models.{name}.variants: no variant {', '.join(repr(v) for v in missing)} "
                         f"(the plan sizes {', '.join(profiles)}; the config has {', '.join(variants)})")
    for variant, profile in profiles.items():
        written = variants[variant].get("launch_profile")
        if written is not None and written != profile:
            raise ValueError(f"models.{name}.variants.{variant}.launch_profile: '{written}', but the plan sizes "
                             f"replicas of '{profile}'")
    return name


@dataclass(frozen=True, slots=True)
class PlannedFleet:
    """What a plan writes into a config: replicas per variant (``counts``), the launch profile
    each variant was sized with (``profiles``: variant -> profile), and the utilisation each
    ran at (``utilisation``; None: none to write)."""

    counts: Mapping[str, int]
    profiles: Mapping[str, str]
    utilisation: Mapping[str, float] | None = None
    # variant -> its engine settings from the plan's layout (``tensor_parallel_size``,
    # ``max_num_batched_tokens``); a variant not here keeps its engine as written.
    engines: Mapping[str, Mapping[str, int]] | None = None
    # variant -> the engine groups its role mix lays over its replicas (``role_groups``), and the
    # split rule the plan replayed them with (None: no prefill-only replica, no rule to write).
    groups: Mapping[str, Sequence[EngineGroup]] | None = None
    disaggregation: str | None = None


@dataclass(frozen=True, slots=True)
class EngineGroup:
    """``count`` replicas running ``engine`` (a duet.yaml ``engine`` block)."""

    count: int
    engine: Mapping[str, Any]


def role_groups(plan: Mapping[str, Any]) -> tuple[dict[str, list[EngineGroup]], str | None]:
    """A results file's plan (``plans.<policy>``) as the engine groups its role mix lays over its
    fleet, variant -> groups in the replicas' order (with the layout's TP size, and its chunk
    budget where the mix sets none), and the rule its prefill replicas were split by (None: none);
    ({}, None) for a plan without roles or without a fleet."""
    mix, fleet = ROLE_MIXES.get(plan.get("roles") or ""), plan.get("fleet")
    if mix is None or not fleet:
        return {}, None
    pd = parse_policy_name(plan["replay_policy"]).pd
    groups: dict[str, list[EngineGroup]] = {}
    for variant, count in fleet.items():
        layout = (plan.get("layout") or {}).get(variant) or {}
        counted: dict[tuple[tuple[str, Any], ...], int] = {}
        for engine in mix.engines(variant, count, disaggregated=pd is not None):
            block = {"role": None if engine.role is EngineRole.BOTH else engine.role.value,
                     "kv_connector": engine.kv_connector,
                     "max_num_batched_tokens": engine.max_num_batched_tokens or layout.get("chunk"),
                     "tensor_parallel_size": layout.get("tp")}
            key = tuple((k, v) for k, v in block.items() if v is not None)
            counted[key] = counted.get(key, 0) + 1
        groups[variant] = [EngineGroup(n, dict(key)) for key, n in counted.items()]
    return groups, None if pd is None else pd.rsplit(":", 1)[-1]


def with_counts(text: str, source: str, fleet: PlannedFleet, command: str, model: str | None = None) -> str:
    """The config ``text`` with ``replica_count`` set on each variant of ``fleet.counts`` and, if
    the model has an ``autoscaling`` section, its ``utilisation_by_variant`` replaced by
    ``fleet.utilisation`` (checked as ``check`` does)."""
    name = check(text, source, fleet.profiles, model)
    raw = yaml.safe_load(text)
    _, variants = variants_of(raw, name)
    for variant, count in fleet.counts.items():
        variants[variant]["replica_count"] = count
    for variant, engine in (fleet.engines or {}).items():
        section = variants[variant]
        section["engine"] = {**(section.get("engine") or {}), **engine}
        if isinstance(section.get("replica_cost"), dict) and "tensor_parallel_size" in engine:
            section["replica_cost"]["gpus"] = engine["tensor_parallel_size"]
    for variant, groups in (fleet.groups or {}).items():
        _write_groups(variants[variant], groups)
    if fleet.disaggregation is not None:
        _split_by(raw["routing"], fleet.disaggregation)
    autoscaling = raw["models"][name].get("autoscaling")
    if fleet.utilisation and isinstance(autoscaling, dict):
        autoscaling["utilisation_by_variant"] = dict(fleet.utilisation)
    body: str = yaml.safe_dump(raw, sort_keys=False, default_flow_style=None, width=120)
    written = HEADER.format(command=command) + body
    parse_config(written, source=source)  # what it wrote, loaded as the gateway would
    return written


def _write_groups(section: dict[str, Any], groups: Sequence[EngineGroup]) -> None:
    """One group: its engine is the variant's. Several: ``engine_groups`` in place of the
    variant's engine and listed replicas (whose URLs ``duet deploy render`` writes again), each
    keeping what the written engine set that the role mix does not (e.g. ``max_num_seqs``)."""
    written = {k: v for k, v in (section.get("engine") or {}).items() if k not in ("role", "kv_connector")}
    if not groups:  # no replicas: nothing to lay out
        return
    if len(groups) == 1:
        section["engine"] = {**(section.get("engine") or {}), **groups[0].engine}
        return
    section.pop("engine", None)
    section.pop("replicas", None)
    section["engine_groups"] = [{"count": g.count, "engine": {**g.engine, **{k: v for k, v in written.items()
                                                                              if k not in g.engine}}} for g in groups]
    section["replica_count"] = sum(g.count for g in groups)


def _split_by(routing: dict[str, Any], rule: str) -> None:
    """Prefill-only replicas as the plan replayed them: split by ``rule``, and the ``engine-role``
    filter in every profile (duet.yaml refuses P/D replicas without it)."""
    routing["disaggregation"] = {**(routing.get("disaggregation") or {}), "rule": rule}
    plugin = next((p["name"] for p in routing["plugins"] if p.get("type") == ENGINE_ROLE), None)
    if plugin is None:
        plugin = ENGINE_ROLE
        routing["plugins"].append({"type": ENGINE_ROLE, "name": plugin})
    for profile in routing["profiles"].values():
        if plugin not in profile.setdefault("filters", []):
            profile["filters"].append(plugin)
