"""A sweep's results file: the replays' points per policy and load (good share with its 95%
interval over seeds), and per constraint (good share >= 99%, >= 95%, or an SLA) each policy's
crossing load in load multiples and req/s, and Duet's against the best baseline's, paired by seed.

Schema (``kind`` grid or search; every number virtual-time, hardware-independent)::

    {command, kind, trace, replicas, replica_set, policies, seeds, seed, prior_error, output_length,
     window: {name, start_s, span_s, shift_s, covered_s: [from, to],
              runs: [{seed, start_s, end_s, requests, rate_rps_at_x1}]},
     loads | bracket: {low, high, steps},
     grid: {policy: [{load, rate_rps, good_fraction, ci95, runs: [per seed], rejected, cost_usd}]},  # grid only
     crossings: [{constraint, level, policies: {policy: {load: Estimate, rate_rps: Estimate,
                  runs: [{kind, value, nonmonotone, trials?}]}},
                  comparison: {best_baseline, ratio: Estimate, runs: [...]} | null}]}

An Estimate (``knee.Estimate.as_dict``) is {kind: exact|at_least|at_most|below|undetermined,
mean, ci95, seeds, nonmonotone_seeds}: a bound carries no interval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.fleet.replay.seeds import interval
from gateway.fleet.sweep import search as searching
from gateway.fleet.sweep.knee import Crossing, estimate, ratio
from gateway.fleet.sweep.run import Point, SweepSpec, TaskResult, grid_crossing, trial
from gateway.fleet.sweep.sla import ConstraintSet, good_share_at_least
from gateway.fleet.world.policies import policy_name

DUET = "duet"
# Duet's policies, subject first: on a fixed fleet (what a sweep holds) Duet runs its fixed-fleet
# objective (duet-fixed); duet (cost-first, the autoscaled fleet's objective) is shown beside it
# and is never anyone's baseline.
DUET_POLICIES = ("duet-fixed", DUET)


@dataclass(frozen=True, slots=True)
class SweptLoads:
    """The loads a sweep replayed: a grid of load multiples (``grid``), or a search between the
    ends of ``bracket`` (None: the grid)."""

    grid: Sequence[float] = ()
    bracket: searching.Bracket | None = None


def assemble(spec: SweepSpec, done: Sequence[TaskResult], *, command: str, levels: Sequence[float],
             swept: SweptLoads, sets: Sequence[ConstraintSet] = ()) -> dict[str, Any]:
    """The results file's object (see the module's schema)."""
    loads, bracket = swept.grid, swept.bracket
    names = [policy_name(p) for p in spec.policies]
    by = {(policy_name(r.task.policy), r.task.seed_index): r for r in done}
    requests = [by[names[0], k].requests for k in range(spec.seeds)]
    per_x1 = [n / spec.window.span_s for n in requests]  # req/s at load 1, per seed
    crossings: list[dict[str, Any]] = []
    if bracket is None:
        for level in levels:
            runs = {p: [grid_crossing(_points(by[p, k]), level) for k in range(spec.seeds)] for p in names}
            crossings.append(_crossing_entry(good_share_at_least(level).text, level, runs, per_x1))
        grid_bracket = searching.Bracket(min(loads), max(loads), 0)
        for constraint_set in sets:
            runs = {p: [searching.result(grid_bracket, [trial(q, constraint_set) for q in _points(by[p, k])])
                        for k in range(spec.seeds)] for p in names}
            crossings.append(_crossing_entry(constraint_set.text, None, runs, per_x1))
    else:
        for index, constraint_set in enumerate(sets):
            trials = {p: [by[p, k].searches[index] for k in range(spec.seeds)] for p in names}
            runs = {p: [searching.result(bracket, t) for t in trials[p]] for p in names}
            crossings.append(_crossing_entry(constraint_set.text, _level(constraint_set), runs, per_x1, trials))
    window = spec.window
    head: dict[str, Any] = {
        "command": command, "kind": "grid" if bracket is None else "search", "trace": spec.trace,
        "replicas": spec.replicas, "replica_set": spec.replicas.partition(":")[0], "policies": names,
        "seeds": spec.seeds, "seed": spec.seed, "prior_error": spec.prior_error, "output_length": _length_mode(spec),
        "time": "virtual (the simulator's clock): independent of the machine that ran it",
        "window": {"name": window.name, "start_s": window.start_s, "span_s": window.span_s, "shift_s": window.shift_s,
                   "covered_s": list(window.covered(spec.seeds)),
                   "runs": [{"seed": spec.seed + k, "start_s": window.start_for(k),
                             "end_s": window.start_for(k) + window.span_s, "requests": requests[k],
                             "rate_rps_at_x1": round(per_x1[k], 4)} for k in range(spec.seeds)]}}
    if bracket is None:
        head["loads"] = sorted(loads)
        head["grid"] = {p: _grid_rows([_points(by[p, k]) for k in range(spec.seeds)], per_x1) for p in names}
    else:
        head["bracket"] = {"low": bracket.low, "high": bracket.high, "steps": bracket.steps}
    return {**head, "crossings": crossings}


def _grid_rows(by_seed: Sequence[Sequence[Point]], per_x1: Sequence[float]) -> list[dict[str, Any]]:
    rows = []
    for column in zip(*by_seed, strict=True):  # one load, every seed
        good, half = interval([q.good_fraction for q in column])
        rows.append({"load": column[0].load, "rate_rps": round(column[0].load * sum(per_x1) / len(per_x1), 4),
                     "good_fraction": round(good, 4), "ci95": round(half, 4),
                     "runs": [q.good_fraction for q in column],
                     "rejected": round(sum(q.rejected for q in column) / len(column), 1),
                     "cost_usd": round(sum(q.cost_usd for q in column) / len(column), 4),
                     "metrics": _mean_metrics(column)})
    return rows


def _crossing_entry(constraint: str, level: float | None, runs: Mapping[str, Sequence[Crossing]],
                    per_x1: Sequence[float],
                    trials: Mapping[str, Sequence[Sequence[searching.Trial]]] | None = None) -> dict[str, Any]:
    policies = {}
    for name, crossings in runs.items():
        rates = [c.scaled(rate) for c, rate in zip(crossings, per_x1, strict=True)]
        seeds = [_run(c, None if trials is None else trials[name][k]) for k, c in enumerate(crossings)]
        policies[name] = {"load": estimate(crossings).as_dict(), "rate_rps": estimate(rates).as_dict(), "runs": seeds}
    return {"constraint": constraint, "level": level, "policies": policies, "comparison": _comparison(runs)}


def subject(policies: Iterable[str]) -> str | None:
    """The Duet policy a sweep judges among ``policies``: the first of ``DUET_POLICIES`` that ran."""
    ran = set(policies)
    return next((name for name in DUET_POLICIES if name in ran), None)


def _comparison(runs: Mapping[str, Sequence[Crossing]]) -> dict[str, Any] | None:
    """Duet's crossing (``subject``) over the best baseline's (the one with the highest mean),
    seed by seed."""
    subject_ = subject(runs)
    baselines = {name: estimate(c) for name, c in runs.items() if name not in DUET_POLICIES}
    known = {name: e.mean for name, e in baselines.items() if e.mean is not None}
    if subject_ is None or not known:
        return None
    best = max(known, key=lambda name: known[name] or 0.0)
    ratios = [ratio(ours, theirs) for ours, theirs in zip(runs[subject_], runs[best], strict=True)]
    return {"subject": subject_, "best_baseline": best, "ratio": estimate(ratios).as_dict(),
            "runs": [_run(r) for r in ratios]}


def compare(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """``_comparison`` of a written crossing entry, from its per-seed runs (a file written before
    the comparison's rule changed gets today's)."""
    runs = {name: [Crossing(r["kind"], r["value"], r["nonmonotone"]) for r in policy["runs"]]
            for name, policy in entry["policies"].items()}
    return _comparison(runs)


def _run(c: Crossing, trials: Sequence[searching.Trial] | None = None) -> dict[str, Any]:
    run: dict[str, Any] = {"kind": c.kind, "value": None if c.value is None else round(c.value, 4),
                           "nonmonotone": c.nonmonotone}
    if trials is not None:
        run["trials"] = [{"load": t.load, "passed": t.passed, "margin": _finite(t.margin)} for t in trials]
    return run


def _points(result: TaskResult) -> list[Point]:
    return sorted(result.points, key=lambda q: q.load)


def _mean_metrics(column: Sequence[Point]) -> dict[str, float | None]:
    keys = column[0].metrics
    return {k: _finite(sum(q.metrics[k] for q in column) / len(column)) for k in keys}


def _finite(value: float) -> float | None:
    """JSON holds no infinity: null (a refused request ranked there) instead."""
    return None if math.isinf(value) else round(value, 4)


def _level(constraint_set: ConstraintSet) -> float | None:
    """The good share a default constraint set asks for (None for an SLA)."""
    (first, *rest) = constraint_set.constraints
    return first.target if not rest and first.key == "good_fraction" and first.op == ">=" else None


def _length_mode(spec: SweepSpec) -> str:
    if spec.forced_length:
        return "forced (the router knows it: oracle)"
    quantile = spec.length_quantile
    return "learned (max_tokens only)" + ("" if quantile == 0.5 else f", planned at its p{quantile * 100:g}")



def merge(written: Mapping[str, Any], fresh: Mapping[str, Any], policies: Sequence[str]) -> dict[str, Any]:
    """``written`` (a results file) with ``policies``' grid rows and crossings taken from
    ``fresh`` (the same sweep, replayed for those policies only), and every comparison redone.
    Replays are deterministic, so the other policies' results stand as written."""
    merged: dict[str, Any] = json.loads(json.dumps(written))
    for name in policies:
        if "grid" in fresh:
            merged["grid"][name] = fresh["grid"][name]
        for entry, new in zip(merged["crossings"], fresh["crossings"], strict=True):
            entry["policies"][name] = new["policies"][name]
    for entry in merged["crossings"]:
        entry["comparison"] = compare(entry)
    return merged
