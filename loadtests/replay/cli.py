"""``duet replay``: a policy (or all of them) over a trace, in virtual time."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

COMPARED = ("always-standard", "always-fast", "round-robin", "least-loaded", "litellm-style", "duet")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("replay", help="replay a trace through a routing policy in virtual time (no HTTP)")
    parser.add_argument("--trace", default="code,conv",
                        help="comma-separated traces: shipped (code -> coding, conv -> chat), or a .csv (Azure "
                             "columns) or .jsonl (Mooncake fields) path, as TASK=PATH (a bare PATH is chat)")
    parser.add_argument("--replicas", default="h100-70b:standard=1,fast=3",
                        help="replica set and counts, e.g. h100-70b:standard=1,fast=3")
    parser.add_argument("--policy", default="duet", help="a shipped policy name or a duet.yaml path")
    parser.add_argument("--compare", action="store_true", help=f"also run {', '.join(COMPARED[:-1])}")
    parser.add_argument("--rate-scale", type=float, default=1.0, help="multiply the trace's arrival rate")
    parser.add_argument("--duration", type=float, default=3600.0, help="seconds of trace to replay")
    parser.add_argument("--start", type=float, default=0.0, help="trace second to start at")
    parser.add_argument("--seed", type=int, default=0)
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
    from loadtests.replay.report import summarize, table
    from loadtests.replay.setup import PriorError, arrivals, check_tasks, parse_cluster, policy_config
    from loadtests.replay.simulation import Replay

    try:
        cluster = parse_cluster(args.replicas)
        policies = [p for p in COMPARED if p != args.policy] + [args.policy] if args.compare else [args.policy]
        prior_error = PriorError.draw([v.name for v in cluster.replica_set.variants], args.prior_error, args.seed)
        configs = {p: policy_config(cluster, p, prior_error) for p in policies}
        schedule = arrivals(args.trace.split(","), args.duration, args.rate_scale, cluster, args.start)
        check_tasks(schedule, configs)
    except (ValueError, OSError) as exc:
        print(f"duet replay: {exc}", file=sys.stderr)
        return 2
    summaries: dict[str, dict[str, Any]] = {}
    for policy, config in configs.items():
        started = time.perf_counter()
        results = Replay(config, cluster.profiles(), seed=args.seed, forced_length=args.forced_length,
                         length_quantile=args.length_quantile).run(schedule)
        summaries[_name(policy)] = {**summarize(results, args.duration, cluster.parity),
                                    "wall_s": round(time.perf_counter() - started, 2)}
        if not args.json:
            print(f"  {_name(policy)}: {len(results)} requests in {summaries[_name(policy)]['wall_s']} s", file=sys.stderr)
    meta = {"trace": args.trace, "replicas": args.replicas, "rate_scale": args.rate_scale, "duration_s": args.duration,
            "start_s": args.start, "seed": args.seed, "requests": len(schedule), "output_length": _length_mode(args),
            "prior_error": {v: {"prefill": p, "decode": d} for v, (p, d) in prior_error.factors.items()},
            "parity": {v: "all" if tasks is None else sorted(tasks) for v, tasks in cluster.parity.items()}}
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"command": command(args), **meta, "policies": summaries}, handle, indent=1)
            handle.write("\n")
    if args.json:
        print(json.dumps({**meta, "policies": summaries}))
    else:
        print(f"{len(schedule)} requests, {args.duration:g} s of {args.trace} x{args.rate_scale:g} on {args.replicas}, "
              f"output length {meta['output_length']}, speed priors off by {args.prior_error:.0%}")
        print(table(summaries))
    return 0


def command(args: argparse.Namespace) -> str:
    """The ``duet replay`` command line that reruns this replay (every option spelled out)."""
    flags = [f"--trace {args.trace}", f"--replicas {args.replicas}", f"--policy {args.policy}",
             "--compare" if args.compare else "", f"--rate-scale {args.rate_scale:g}", f"--duration {args.duration:g}",
             f"--start {args.start:g}", f"--seed {args.seed}", f"--prior-error {args.prior_error:g}",
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
