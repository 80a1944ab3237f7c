"""``duet bench``: load tests and benchmarks. ``duet bench slo`` replays traces through the gateway
with locust and reports SLO attainment, goodput and cost, for one policy or a comparison."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.fleet.world.policies import ALL_POLICIES, policy_name
from gateway.fleet.world.replica_sets import REPLICA_SETS
from loadtests.scoring.slo import parse_slos


def register(subparsers: Any) -> None:
    """Add ``bench`` (with its ``slo`` subcommand) to the ``duet`` parser."""
    bench = subparsers.add_parser("bench", help="load tests and benchmarks", description="Load tests and benchmarks.")
    kinds = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    slo = kinds.add_parser("slo", help="SLO attainment, goodput and cost under a replayed trace (locust)",
                           description=__doc__)
    add_slo_arguments(slo)
    slo.set_defaults(run=run_slo)


def add_slo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", default="h100-70b",
                        help=f"replica set ({', '.join(sorted(REPLICA_SETS))}): simulator profiles per variant and "
                             "prices, with optional counts as in duet replay, e.g. h100-70b:standard=1,fast=3")
    parser.add_argument("--replica-urls", default="",
                        help="use running replicas instead: VARIANT=URL[,VARIANT=URL...] (every variant needed)")
    parser.add_argument("--policy", action="append", default=[],
                        help=f"a shipped policy ({', '.join(ALL_POLICIES)}) or a Duet config file; repeatable")
    parser.add_argument("--compare", action="store_true", help="every shipped policy, LiteLLM included")
    parser.add_argument("--duration", type=float, default=60.0, help="model seconds of trace arrivals per run")
    parser.add_argument("--rate-scale", default="1", help="arrival-rate multiplier(s), comma-separated: a sweep")
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="simulate replicas this much faster than real (arrivals and budgets follow)")
    parser.add_argument("--trace-start", type=float, default=0.0, help="start this many trace seconds in")
    parser.add_argument("--traces", default="code,conv", help="shipped traces to replay together")
    parser.add_argument("--slos", default="", help="TASK=TTFT_MS/TPOT_MS,... over the defaults")
    parser.add_argument("--trace-users", type=int, default=200, help="most requests in flight")
    parser.add_argument("--port", type=int, default=None, help="gateway port (default: a free one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prior-error", type=float, default=0.3,
                        help="the router's speed priors are off by this much per variant, slower or faster by a "
                             "seeded draw (0: the simulator profile's own, an oracle)")
    parser.add_argument("--forced-length", action="store_true",
                        help="force each answer's traced length (max_tokens = min_tokens, ignore_eos), which tells the "
                             "gateway the true length: an oracle, for comparison (default: only the simulated "
                             "replicas are told it, in vllm_xargs)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-slo"), help="report folder")
    parser.add_argument("--report-only", action="store_true", help="rebuild the report from the run folders in --out")
    parser.add_argument("--results", type=Path, default=None,
                        help="also write the small results file docs are rendered from, e.g. "
                             "docs/results/bench-slo/NAME.json (python -m loadtests.sections renders them)")
    parser.add_argument("--note", default="", help="what a reader of --results needs beside the numbers "
                                                    "(e.g. what else the machine ran)")


def _replica_urls(text: str) -> dict[str, list[str]]:
    urls: dict[str, list[str]] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        variant, _, url = item.partition("=")
        urls.setdefault(variant, []).append(url.rstrip("/"))
    return urls


def command_line(args: argparse.Namespace) -> str:
    """The command that reruns ``args`` (without ``--report-only``, and without ``--note``, which
    the results keep on their own): what reports and results show."""
    parts = ["duet bench slo", "--replicas", args.replicas]
    parts += ["--compare"] if args.compare else [f"--policy {p}" for p in args.policy]
    parts += [f"--duration {args.duration:g}", f"--time-scale {args.time_scale:g}", f"--trace-start {args.trace_start:g}",
              f"--rate-scale {args.rate_scale}", f"--traces {args.traces}", f"--trace-users {args.trace_users}",
              f"--seed {args.seed}", f"--prior-error {args.prior_error:g}"]
    parts += ["--forced-length"] if args.forced_length else []
    optional = {"--replica-urls": args.replica_urls, "--slos": args.slos}
    parts += [f"{flag} {value}" for flag, value in optional.items() if value]
    parts += [f"--out {args.out}"] + ([f"--results {args.results}"] if args.results else [])
    return " ".join(parts)


def run_slo(args: argparse.Namespace) -> int:
    """Run every (policy, rate), then write the report; 2 on a setup error with its reason."""
    from gateway.fleet.replay.setup import parse_cluster
    from loadtests.benchmarks.slo.bench import BenchSettings
    from loadtests.benchmarks.slo.runner import rebuild_report, run_bench
    from loadtests.launch.stack import StackError

    policies = list(ALL_POLICIES) if args.compare else (args.policy or ["duet"])
    try:
        replica_set = parse_cluster(args.replicas).with_counts
    except ValueError as exc:
        print(f"duet bench slo: {exc}", file=sys.stderr)
        return 2
    settings = BenchSettings(
        replica_set=replica_set, slos=parse_slos(args.slos), duration_s=args.duration,
        time_scale=args.time_scale, trace_start_s=args.trace_start,
        traces=tuple(t for t in args.traces.split(",") if t), trace_users=args.trace_users, seed=args.seed,
        prior_error=args.prior_error, forced_length=args.forced_length, port=args.port,
        replica_urls=_replica_urls(args.replica_urls),
    )
    rates = [float(r) for r in args.rate_scale.split(",") if r]
    command = command_line(args)
    try:
        build = rebuild_report if args.report_only else run_bench
        report = build(settings, policies, rates, args.out, command)
    except StackError as exc:
        print(f"duet bench slo: {exc}", file=sys.stderr)
        return 2
    if args.results is not None:
        from loadtests.benchmarks.slo import results as slo_results

        content = slo_results.results(report, settings, slo_results.host_facts(), args.note)
        slo_results.write(args.results, content)
    print(json.dumps({"out": str(args.out), "goodput": report["goodput"],
                      "policies": [policy_name(p) for p in policies]}))
    return 0
