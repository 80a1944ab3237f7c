"""A plan's fleet written into a Duet config: each variant's ``replica_count``, the number of
replicas ``duet deploy render`` starts for it (gateway/deploy/plan.py), its layout (the engine's
``tensor_parallel_size`` and ``max_num_batched_tokens``, and a ``replica_cost``'s GPUs to match), and, when the model
autoscales (``autoscaling`` present), the utilisation the fleet ran at per variant
(``autoscaling.utilisation_by_variant``), so that the gauge asks for this fleet at this traffic.
The rest of the file is kept as written; the result must load as the gateway loads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gateway.flow import parse_config

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
    autoscaling = raw["models"][name].get("autoscaling")
    if fleet.utilisation and isinstance(autoscaling, dict):
        autoscaling["utilisation_by_variant"] = dict(fleet.utilisation)
    body: str = yaml.safe_dump(raw, sort_keys=False, default_flow_style=None, width=120)
    written = HEADER.format(command=command) + body
    parse_config(written, source=source)  # what it wrote, loaded as the gateway would
    return written
