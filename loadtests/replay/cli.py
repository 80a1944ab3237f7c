"""``duet replay``: a policy (or all of them) over a trace, in virtual time."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.flow import DuetConfig
    from loadtests.replay.setup import Cluster, PriorError
    from loadtests.traces import Arrival

COMPARED = ("always-standard", "always-fast", "round-robin", "least-loaded", "litellm-style", "static-split",
            "llm-d-default", "duet")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("replay", help="replay a trace through a routing policy in virtual time (no HTTP)")
    parser.add_argument("--trace", default="code,conv",
                        help="comma-separated traces: shipped (code -> coding, conv -> chat, mooncake -> chat with "
                             "its prompts' prefix blocks), or a .csv (Azure columns) or .jsonl (Mooncake fields, "
                             "hash_ids kept) path, as TASK=PATH (a bare PATH is chat)")
    parser.add_argument("--replicas", default="h100-70b:standard=1,fast=3",
                        help="replica set and counts, e.g. h100-70b:standard=1,fast=3")
    parser.add_argument("--policy", default="duet", help="a shipped policy name or a duet.yaml path")
    parser.add_argument("--compare", action="store_true", help=f"also run {', '.join(COMPARED[:-1])}")
    parser.add_argument("--rate-scale", type=float, default=1.0, help="multiply the trace's arrival rate")
    parser.add_argument("--duration", type=float, default=3600.0, help="seconds of trace to replay")
    parser.add_argument("--start", type=float, default=0.0, help="trace second to start at")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1,
                        help="replay this many seeds (seed, seed+1, ...) and report means with 95%% intervals; "
                             "seed k also shifts the window by k x --shift")
    parser.add_argument("--shift", type=float, default=60.0,
                        help="trace seconds each further seed's window starts later (negative: earlier)")
    parser.add_argument("--forced-length", action="store_true",
                        help="requests force their trace's output length (min_tokens = max_tokens, ignore_eos), which "
                             "tells the router the true length: an oracle, for comparison")
    parser.add_argument("--prior-error", type=float, default=0.3,
                        help="the router's speed priors are off by this fraction per variant (prefill and decode, "
                             "each too fast or too slow by a seeded coin), for the online learner to correct; 0: "
                             "the simulator's own profiles, exactly")
    parser.add_argument("--length-quantile", type=float, default=0.5,
                        help="which quantile of each task's learned output lengths the router plans with")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--out", help="also write the JSON object (with the command that made it) to this file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from loadtests.replay.report import table
    from loadtests.replay.seeds import combine

    try:
        runs = [_prepare(args, index) for index in range(args.seeds)]
    except (ValueError, OSError) as exc:
        print(f"duet replay: {exc}", file=sys.stderr)
        return 2
    by_seed = [_replay(args, run_) for run_ in runs]
    summaries = by_seed[0] if args.seeds == 1 else {name: combine([s[name] for s in by_seed]) for name in by_seed[0]}
    first = runs[0]
    meta = {"trace": args.trace, "replicas": args.replicas, "rate_scale": args.rate_scale, "duration_s": args.duration,
            "start_s": args.start, "seed": args.seed, "requests": len(first.schedule), "output_length": _length_mode(args),
            "prior_error": _factors(first.prior_error),
            "parity": {v: "all" if tasks is None else sorted(tasks) for v, tasks in first.cluster.parity.items()}}
    if args.seeds > 1:
        meta["seeds"] = {"count": args.seeds, "shift_s": args.shift, "requests": [len(r.schedule) for r in runs],
                         "prior_error": [_factors(r.prior_error) for r in runs]}
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
    from loadtests.replay.seeds import start_for
    from loadtests.replay.setup import PriorError, arrivals, check_tasks, parse_cluster, policy_config

    seed = args.seed + index
    cluster = parse_cluster(args.replicas)
    policies = [p for p in COMPARED if p != args.policy] + [args.policy] if args.compare else [args.policy]
    prior_error = PriorError.draw([v.name for v in cluster.replica_set.variants], args.prior_error, seed)
    configs = {p: policy_config(cluster, p, prior_error) for p in policies}
    schedule = arrivals(args.trace.split(","), args.duration, args.rate_scale, cluster,
                        start_for(index, args.start, args.shift))
    check_tasks(schedule, configs)
    return _SeedRun(seed, cluster, prior_error, configs, schedule)


def _replay(args: argparse.Namespace, run_: _SeedRun) -> dict[str, dict[str, Any]]:
    """Each policy's summary for one seed."""
    from loadtests.replay.report import summarize
    from loadtests.replay.simulation import Replay

    summaries: dict[str, dict[str, Any]] = {}
    for policy, config in run_.configs.items():
        started = time.perf_counter()
        results = Replay(config, run_.cluster.profiles(), seed=run_.seed, forced_length=args.forced_length,
                         length_quantile=args.length_quantile).run(run_.schedule)
        summary = summaries[_name(policy)] = {**summarize(results, args.duration, run_.cluster.parity),
                                              "wall_s": round(time.perf_counter() - started, 2)}
        if not args.json:
            print(f"  seed {run_.seed} {_name(policy)}: {len(results)} requests in {summary['wall_s']} s", file=sys.stderr)
    return summaries


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
