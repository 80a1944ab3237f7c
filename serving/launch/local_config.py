"""The gateway config for local replicas: the demo config's policy (routing, tasks, state) with one
variant per launch profile started, each pointing at its replica.

Prices are a chargeback of replica time, never the demo's illustrative per-token list: every local
replica costs the same (``LOCAL_REPLICA_COST``: one core each), so a variant's per-token price is
what its measured (or prior) speed makes of that hour (``ReplicaCost.chargeback``, as the H100
replica sets are priced). A high-speed variant that runs slower on this machine is then dearer,
never "cheapest".

Variant names and kinds come from the profiles. Speed priors come from each profile's simulator twin
(``serving.sim.fidelity.prior``: one calibration for all variants, so the router compares like with like),
else from the demo variant written for the same launch profile, else from the demo's standard
variant (no calibrated twin: the gateway's online bias correction learns the real speed).

Allowed task types come from the demo's variant of the same kind, narrowed by the profile's
committed parity report where it has one: a task type the report refuses is taken off. A report
never widens them. An "allowed" verdict where the standard itself scores ~0 (SmolLM2-135M on
reasoning) proves nothing, so widening stays the operator's explicit step (``duet parity
--write-policy``).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serving.launch.profile import LaunchProfile

STANDARD = "standard"  # the demo variant that full-precision profiles take their policy from
FAST = "fast"  # the demo variant the high-speed profiles take theirs from
# What one local replica costs per hour: each is bound to one core of the machine (``gpus`` counts
# the replica's accelerators; here the core). Illustrative (about a cloud vCPU-hour); only the
# ratio between variants matters to routing, and it comes from their speeds.
LOCAL_REPLICA_COST: Mapping[str, float] = {"gpus": 1, "usd_per_gpu_hour": 0.05}


@dataclass(frozen=True, slots=True)
class LocalVariant:
    """A profile started here and the URL its replica answers on."""

    profile: LaunchProfile
    url: str


def served_model_name(model: str, profile: LaunchProfile) -> str:
    return f"{model}-{profile.variant}"


def local_config(demo: Mapping[str, Any], variants: Sequence[LocalVariant], host: str, port: int,
                 reports: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """``demo`` (a parsed duet.yaml with one model holding ``standard`` and ``fast``) with that
    model's variants replaced by ``variants``. ``reports``: profile name -> its parity report
    (parsed parity.json). Raises ValueError if the demo lacks those two variants, or a report
    has no per-task verdicts."""
    config = copy.deepcopy(dict(demo))
    (model, section), *others = config["models"].items()
    if others or not {STANDARD, FAST} <= set(section["variants"]):
        raise ValueError(f"the demo config must hold one model with variants '{STANDARD}' and '{FAST}'")
    demo_variants = section["variants"]
    tasks = list(config.get("routing", {}).get("tasks", {}))
    section["variants"] = {v.profile.variant: _variant(model, v, demo_variants, tasks, (reports or {}).get(v.profile.name))
                           for v in variants}
    config.setdefault("server", {}).update({"host": host, "port": port})
    return config


def _variant(model: str, local: LocalVariant, demo_variants: Mapping[str, Any], tasks: Sequence[str],
             report: Mapping[str, Any] | None) -> dict[str, Any]:
    profile = local.profile
    template = demo_variants[STANDARD if profile.kind == "full" else FAST]
    variant: dict[str, Any] = {
        "kind": profile.kind,
        "served_model_name": served_model_name(model, profile),
        "max_model_len": demo_variants[STANDARD]["max_model_len"],
        "tools": template.get("tools", True),
        "replica_cost": dict(LOCAL_REPLICA_COST),
        "speed": speed_prior(profile, demo_variants),
    }
    if "allowed_tasks" in template:
        variant["allowed_tasks"] = list(template["allowed_tasks"])
    if report is not None and profile.kind != "full":
        variant.update(narrowed_by_report(variant.get("allowed_tasks", "all"), tasks, report))
    variant["launch_profile"] = profile.name
    if profile.scheduling != "fcfs":  # the replica reads vLLM's priority field: the gateway sends it
        variant["scheduling"] = profile.scheduling
    variant["replicas"] = [{"url": local.url}]
    return variant


def narrowed_by_report(allowed: str | Sequence[str], tasks: Sequence[str], report: Mapping[str, Any]) -> dict[str, Any]:
    """``allowed_tasks`` (``"all"`` or a list of ``tasks``) without the task types ``report``
    refuses, and ``allowed_tasks_source`` naming the report. Raises ValueError on a report
    without per-task verdicts."""
    try:
        refused = {task for task, entry in report["tasks"].items() if entry["verdict"] != "allowed"}
        source = f"parity report {report['metadata']['date']} sha256:{report['report_sha256']} (its refusals)"
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a duet parity report (parity.json): missing {exc}") from exc
    base = list(tasks) if allowed == "all" else list(allowed)
    return {"allowed_tasks": [task for task in base if task not in refused], "allowed_tasks_source": source}


def speed_prior(profile: LaunchProfile, demo_variants: Mapping[str, Any]) -> dict[str, Any]:
    """The ``speed:`` block for ``profile`` (see the module docstring for the order of sources)."""
    if profile.sim_profile is not None:
        # Imported by name: the simulator stays out of the gateway's import graph (and its type check).
        sim_profile = importlib.import_module("serving.sim.profile")
        sim_prior = importlib.import_module("serving.sim.fidelity.prior")
        prior: dict[str, Any] = sim_prior.speed_prior(sim_profile.load_profile(profile.sim_profile))
        return prior
    for demo_variant in demo_variants.values():
        if demo_variant.get("launch_profile") == profile.name:
            return dict(copy.deepcopy(demo_variant["speed"]))
    return dict(copy.deepcopy(demo_variants[STANDARD]["speed"]))
