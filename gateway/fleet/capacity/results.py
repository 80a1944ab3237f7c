"""The results file of ``duet plan`` (``docs/results/capacity/<replica set>.json``): the plan's
settings and command, and per policy its cheapest fleet, what it costs per hour, the good share
it reaches on the tuning seeds it was found on and on the held-out seeds, and every fleet tried.

Roles: ``duet`` (the plan's policy, whose fleet a config gets), ``baseline`` (other routers on
both variants) and ``all-standard`` (a standard-only fleet: what a team without a fast variant
runs)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.fleet.capacity.search import Fleet
from gateway.fleet.replay.seeds import interval
from gateway.fleet.replay.windows import Window
from gateway.fleet.world.pricing import H100_USD_PER_GPU_HOUR

if TYPE_CHECKING:
    from gateway.fleet.capacity.plan import LayoutSearch, PlanSpec, PolicyPlan

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results" / "capacity"


def role(plan: PolicyPlan, policy: str) -> str:
    return "all-standard" if plan.standard_only else "duet" if plan.policy == policy else "baseline"


def _layouts(spec: PlanSpec) -> dict[str, Any]:
    """What the plan's layouts were: each variant's options, and who may try which."""
    return {**spec.space.as_dict(), "roles": spec.space.roles_dict(),
            "duet": "any combination of the variants' options, and each TP combination with each role mix",
            "baseline": "one TP size and chunk budget for every replica, both variants",
            "all-standard": "any of the standard variant's options"}


def assemble(spec: PlanSpec, plans: Sequence[PolicyPlan], *, policy: str, command: str) -> dict[str, Any]:
    """The results object of one plan; ``policy`` is the plan's own (its fleet goes to the config)."""
    replica_set = spec.replicas
    return {
        "command": command,
        "replica_set": spec.replica_set,
        "trace": spec.trace,
        "rate_scale": spec.rate_scale,
        "target": spec.target,
        "policy": policy,
        "max_replicas": spec.max_replicas,
        "all_standard_max_replicas": spec.all_standard_max_replicas,
        "seed": spec.seed,
        "prior_error": spec.prior_error,
        "length_quantile": spec.length_quantile,
        "replica_usd_per_hour": {v.name: None if v.cost is None else v.cost.usd_per_hour for v in replica_set.variants},
        "parity": {v: "all" if tasks is None else sorted(tasks) for v, tasks in replica_set.parity.items()},
        "search": _window(spec.search, spec.search_seeds),
        "check": _window(spec.check, spec.check_seeds),
        "layouts": _layouts(spec),
        "usd_per_gpu_hour": H100_USD_PER_GPU_HOUR,
        "time": "virtual (the simulator's clock): the shares do not depend on the machine; wall_s does",
        "plans": {_key(p, plans): _plan(spec, p, policy) for p in plans},
    }


# What two plans must share for one's fleet to be a comparator of the other's: the traffic and how
# it was judged (a plan of its own may size the all-standard fleet further: --all-standard-max-replicas).
SAME_TRAFFIC = ("replica_set", "trace", "rate_scale", "target", "seed", "prior_error", "length_quantile", "search",
                "check", "replica_usd_per_hour")


def traffic_differs(plan: Mapping[str, Any], other: Mapping[str, Any]) -> list[str]:
    """The ``SAME_TRAFFIC`` keys on which two plans' results differ (none: one may compare with the other)."""
    return [key for key in SAME_TRAFFIC if plan.get(key) != other.get(key)]


# How a plan's all-standard entry is named beside the same policy's entry in another role.
ALL_STANDARD_SUFFIX = " (all-standard)"


def _key(plan: PolicyPlan, plans: Sequence[PolicyPlan]) -> str:
    """A plan's name in the results: its policy's, or where the same policy was also sized in
    another role (a comparator-only plan: ``--policy llm-d-default --all-standard llm-d-default``)
    the all-standard one's name says its role, so neither overwrites the other."""
    shared = sum(p.policy == plan.policy for p in plans) > 1
    return f"{plan.policy}{ALL_STANDARD_SUFFIX}" if shared and plan.standard_only else plan.policy


def _window(window: Window, seeds: int) -> dict[str, Any]:
    return {"name": window.name, "start_s": window.start_s, "span_s": window.span_s, "shift_s": window.shift_s,
            "seeds": seeds, "covered_s": list(window.covered(seeds))}


def _plan(spec: PlanSpec, plan: PolicyPlan, policy: str) -> dict[str, Any]:
    found = plan.found
    out: dict[str, Any] = {
        "role": role(plan, policy),
        "fleet": None if found.fleet is None else found.fleet.counts,
        "replicas": None if found.fleet is None else found.fleet.replicas,
        "usd_per_hour": round(found.cost, 2),
        "search_share": found.share,
        "parity_floor": plan.floor,
        "replays": len(found.tried) * spec.search_seeds + len(plan.check_shares),
        "wall_s": {"search": plan.search_s, "check": plan.check_s},
        "tried": [{"fleet": f.counts, "share": s} for f, s in found.tried],
    }
    if plan.layout is not None:
        out["layout"] = plan.layout.as_dict()
        out["roles"] = None if plan.layout.roles is None else plan.layout.roles.name
        out["layouts"] = [_search(s) for s in plan.searches]
        if found.fleet is not None:  # what ``duet replay`` names this fleet's policy with its roles
            out["replay_policy"] = plan.policy + plan.layout.suffix(found.fleet.counts)
    if found.fleet is None:  # not even the largest fleet searched meets the target: its cost is a floor
        most = spec.max_replicas_for(plan.standard_only)
        out["largest"] = Fleet(most, 0 if plan.standard_only else most).counts
        return out
    out["utilisation"] = dict(plan.utilisation)
    mean, half = interval(plan.check_shares)
    out["check_share"] = round(mean, 4)
    out["check_ci95"] = round(half, 4)
    out["check_runs"] = list(plan.check_shares)
    return out


def _search(search: LayoutSearch) -> dict[str, Any]:
    """One layout's search: skipped (none: its largest fleet under the cap), or what it found and tried."""
    found = search.found
    roles = None if search.layout.roles is None else search.layout.roles.name
    if found is None:
        return {"layout": search.layout.as_dict(), "roles": roles, "searched": False}
    return {"layout": search.layout.as_dict(), "roles": roles, "searched": True,
            "fleet": None if found.fleet is None else found.fleet.counts, "usd_per_hour": round(found.cost, 2),
            "share": found.share, "tried": [{"fleet": f.counts, "share": s, "usd_per_hour": round(usd, 2)}
                                            for (f, s), usd in zip(found.tried, search.tried_usd, strict=True)]}


def fleet_of(plan: Mapping[str, Any]) -> Fleet | None:
    fleet = plan["fleet"]
    return None if fleet is None else Fleet(fleet["standard"], fleet["fast"])


def write(results: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")


def load(directory: Path = RESULTS) -> list[dict[str, Any]]:
    """Every committed plan, by replica set name."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]
