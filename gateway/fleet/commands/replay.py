"""``duet replay``: a policy (or all of them) over a trace, in virtual time."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from gateway.fleet.commands.replay_args import COMPARED
from gateway.fleet.commands.sweep import run as run_sweep
from gateway.fleet.commands.sweep import sweeping
from gateway.fleet.replay.report import summarize, table
from gateway.fleet.replay.seeds import combine, start_for
from gateway.fleet.replay.setup import (
    Cluster,
    arrivals,
    check_tasks,
    parse_cluster,
    policy_config,
    scrape_interval_s,
)
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.workload.traces import Arrival
from gateway.fleet.world.detections import unnamed
from gateway.fleet.world.prior_error import PriorError
from gateway.flow import DuetConfig


def run(args: argparse.Namespace) -> int:
    if sweeping(args):
        return run_sweep(args)
    try:
        runs = [_prepare(args, index) for index in range(args.seeds)]
    except (ValueError, OSError) as exc:
        print(f"duet replay: {exc}", file=sys.stderr)
        return 2
    first = runs[0]
    meta: dict[str, Any] = {
        "trace": args.trace, "replicas": args.replicas, "rate_scale": args.rate_scale, "duration_s": args.duration,
        "start_s": args.start, "seed": args.seed, "requests": len(first.schedule), "output_length": _length_mode(args),
        "prior_error": _factors(first.prior_error),
        "parity": {v: "all" if tasks is None else sorted(tasks) for v, tasks in first.cluster.parity.items()}}
    if args.seeds > 1:
        meta["seeds"] = {"count": args.seeds, "shift_s": args.shift, "requests": [len(r.schedule) for r in runs],
                         "prior_error": [_factors(r.prior_error) for r in runs]}
    intervals = {p: scrape_interval_s(p) for p in first.configs}  # read from each policy file once
    meta["scrape_interval_s"] = {_name(p): s for p, s in intervals.items()}
    kept: dict[str, dict[str, Any]] = {}
    if args.rerun is not None:
        try:
            kept = _kept(args, meta, first.configs)  # checked before an hour of replays, not after
        except ValueError as exc:
            print(f"duet replay: {exc}", file=sys.stderr)
            return 2
    by_seed = [_replay(args, run_, intervals, skip=set(kept)) for run_ in runs]
    fresh = by_seed[0] if args.seeds == 1 else {name: combine([s[name] for s in by_seed]) for name in by_seed[0]}
    summaries = {_name(p): fresh[_name(p)] if _name(p) in fresh else kept[_name(p)] for p in first.configs}
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"command": command(args), **meta, "policies": summaries}, handle, indent=1)
            handle.write("\n")
    if args.json:
        print(json.dumps({**meta, "policies": summaries}))
    else:
        print(f"{len(first.schedule)} requests, {args.duration:g} s of {args.trace} x{args.rate_scale:g} on {args.replicas}, "
              f"output length {meta['output_length']}, speed priors off by {args.prior_error:.0%}")
        print(table(summaries))
    return 0


@dataclass(frozen=True, slots=True)
class _SeedRun:
    """One seed's replay: its window's arrivals and the policies' configs with its prior error."""

    seed: int
    cluster: Cluster
    prior_error: PriorError
    configs: dict[str, DuetConfig]
    schedule: tuple[Arrival, ...]


def _prepare(args: argparse.Namespace, index: int) -> _SeedRun:
    """Seed ``args.seed + index``: the window shifted by ``index x --shift`` (``seeds.start_for``)."""
    seed = args.seed + index
    cluster = parse_cluster(args.replicas)
    policies = [p for p in COMPARED if p != args.policy] + [args.policy] if args.compare else [args.policy]
    prior_error = cluster.prior_error(args.prior_error, seed)
    configs = {p: policy_config(cluster, p, prior_error) for p in policies}
    schedule = arrivals(args.trace.split(","), args.duration, args.rate_scale, cluster,
                        start_for(index, args.start, args.shift))
    check_tasks(schedule, configs)
    return _SeedRun(seed, cluster, prior_error, configs, schedule)


def _replay(args: argparse.Namespace, run_: _SeedRun, intervals: dict[str, float],
            skip: set[str]) -> dict[str, dict[str, Any]]:
    """Each policy's summary for one seed, but those in ``skip``; ``intervals``: policy -> how
    often its replicas are scraped."""
    summaries: dict[str, dict[str, Any]] = {}
    for policy, config in run_.configs.items():
        if _name(policy) in skip:
            continue
        started = time.perf_counter()
        settings = ReplaySettings(run_.seed, intervals[policy], args.forced_length, args.length_quantile,
                                  **unnamed(args.unnamed_share, args.keyed_tasks))
        results = Replay(config, run_.cluster.profiles(), settings).run(run_.schedule)
        summary = summaries[_name(policy)] = {**summarize(results, args.duration, run_.cluster.parity),
                                              "wall_s": round(time.perf_counter() - started, 2)}
        if not args.json:
            print(f"  seed {run_.seed} {_name(policy)}: {len(results)} requests in {summary['wall_s']} s", file=sys.stderr)
    return summaries




def _kept(args: argparse.Namespace, meta: dict[str, Any], configs: dict[str, DuetConfig]) -> dict[str, dict[str, Any]]:
    """``--rerun``: the --out file's summaries of the policies not rerun. The file must come from
    this very command, over the same arrivals and prior errors, and hold every one of them."""
    if not args.compare or not args.out:
        raise ValueError("--rerun needs --compare and --out (the results file to update)")
    rerun = set(args.rerun.split(","))
    names = [_name(p) for p in configs]
    if unknown := rerun - set(names):
        raise ValueError(f"--rerun: not compared here: {', '.join(sorted(unknown))}")
    try:
        with open(args.out) as handle:
            written = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--rerun: cannot read {args.out}: {exc}") from exc
    same = ("requests", "prior_error", "seeds", "parity", "output_length")
    if written.get("command") != command(args) or any(written.get(k) != meta.get(k) for k in same):
        raise ValueError(f"--rerun: {args.out} was not written by this command over the same arrivals: "
                         "rerun every policy instead")
    policies = written.get("policies", {})
    if missing := [name for name in names if name not in rerun and name not in policies]:
        raise ValueError(f"--rerun: {args.out} has no results for {', '.join(missing)}: rerun them too")
    return {name: policies[name] for name in names if name not in rerun}


def _factors(prior_error: PriorError) -> dict[str, dict[str, float]]:
    return {v: {"prefill": p, "decode": d} for v, (p, d) in prior_error.factors.items()}


def command(args: argparse.Namespace) -> str:
    """The ``duet replay`` command line that reruns this replay (every option spelled out)."""
    flags = [f"--trace {args.trace}", f"--replicas {args.replicas}", f"--policy {args.policy}",
             "--compare" if args.compare else "", f"--rate-scale {args.rate_scale:g}", f"--duration {args.duration:g}",
             f"--start {args.start:g}", f"--seed {args.seed}",
             f"--seeds {args.seeds} --shift {args.shift:g}" if args.seeds > 1 else "", f"--prior-error {args.prior_error:g}",
             "--forced-length" if args.forced_length else "",
             f"--length-quantile {args.length_quantile:g}" if args.length_quantile != 0.5 else ""]
    return " ".join(["duet replay", *filter(None, flags)])


def _length_mode(args: argparse.Namespace) -> str:
    if args.forced_length:
        return "forced (the router knows it: oracle)"
    median = args.length_quantile == 0.5
    return "learned (max_tokens only)" if median else f"learned (max_tokens only), planned at its p{args.length_quantile * 100:g}"


def _name(policy: str) -> str:
    return policy.rsplit("/", 1)[-1].removesuffix(".yaml")
