"""The gateway config for local replicas: the demo config's policy (routing, tasks, state, prices)
with one variant per launch profile started, each pointing at its replica.

Variant names and kinds come from the profiles. Speed priors come from each profile's simulator twin
(``serving.sim.prior``: one calibration for all variants, so the router compares like with like),
else from the demo variant written for the same launch profile, else from the demo's standard
variant (no calibrated twin: the gateway's online bias correction learns the real speed).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serving.launch.profile import LaunchProfile

STANDARD = "standard"  # the demo variant that full-precision profiles take their price and policy from
FAST = "fast"  # the demo variant the high-speed profiles take theirs from


@dataclass(frozen=True, slots=True)
class LocalVariant:
    """A profile started here and the URL its replica answers on."""

    profile: LaunchProfile
    url: str


def served_model_name(model: str, profile: LaunchProfile) -> str:
    return f"{model}-{profile.variant}"


def local_config(demo: Mapping[str, Any], variants: Sequence[LocalVariant], host: str, port: int) -> dict[str, Any]:
    """``demo`` (a parsed duet.yaml with one model holding ``standard`` and ``fast``) with that
    model's variants replaced by ``variants``. Raises ValueError if the demo lacks those two."""
    config = copy.deepcopy(dict(demo))
    (model, section), *others = config["models"].items()
    if others or not {STANDARD, FAST} <= set(section["variants"]):
        raise ValueError(f"the demo config must hold one model with variants '{STANDARD}' and '{FAST}'")
    demo_variants = section["variants"]
    section["variants"] = {v.profile.variant: _variant(model, v, demo_variants) for v in variants}
    config.setdefault("server", {}).update({"host": host, "port": port})
    return config


def _variant(model: str, local: LocalVariant, demo_variants: Mapping[str, Any]) -> dict[str, Any]:
    profile = local.profile
    template = demo_variants[STANDARD if profile.kind == "full" else FAST]
    variant: dict[str, Any] = {
        "kind": profile.kind,
        "served_model_name": served_model_name(model, profile),
        "max_model_len": demo_variants[STANDARD]["max_model_len"],
        "tools": template.get("tools", True),
        "price": copy.deepcopy(template["price"]),
        "speed": speed_prior(profile, demo_variants),
    }
    if "allowed_tasks" in template:
        variant["allowed_tasks"] = list(template["allowed_tasks"])
    variant["launch_profile"] = profile.name
    variant["replicas"] = [{"url": local.url}]
    return variant


def speed_prior(profile: LaunchProfile, demo_variants: Mapping[str, Any]) -> dict[str, Any]:
    """The ``speed:`` block for ``profile`` (see the module docstring for the order of sources)."""
    if profile.sim_profile is not None:
        # Imported by name: the simulator stays out of the gateway's import graph (and its type check).
        sim_profile = importlib.import_module("serving.sim.profile")
        sim_prior = importlib.import_module("serving.sim.prior")
        prior: dict[str, Any] = sim_prior.speed_prior(sim_profile.load_profile(profile.sim_profile))
        return prior
    for demo_variant in demo_variants.values():
        if demo_variant.get("launch_profile") == profile.name:
            return dict(copy.deepcopy(demo_variant["speed"]))
    return dict(copy.deepcopy(demo_variants[STANDARD]["speed"]))
