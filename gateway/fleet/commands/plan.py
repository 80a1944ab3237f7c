"""``duet plan``: the cheapest fleet per variant that meets a good-share target on a trace, for
Duet's policy, the baselines and an all-standard fleet, by replaying the router against the
simulator (``plan.py``); optionally written into a Duet config for ``duet deploy render``.

    duet plan --replicas h100-70b-w4a16 --trace code,conv --rate-scale 1 --target 0.99 --jobs 2 \\
        --out docs/results/capacity/h100-70b-w4a16.json --write-config duet.yaml --to duet.planned.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gateway.fleet.capacity import fleet_config
from gateway.fleet.capacity.plan import PlanSpec, plan_all
from gateway.fleet.capacity.render import table
from gateway.fleet.capacity.results import assemble, fleet_of, write
from gateway.fleet.replay.windows import HELDOUT, TUNING, Window
from gateway.fleet.world.replica_sets import REPLICA_SETS
from gateway.flow import ConfigError

BASELINES = ("least-loaded", "llm-d-default", "production-stack-prefixaware", "round-robin", "static-split")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("plan", help="the cheapest replica count per variant meeting a target (replayed)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", default="h100-70b", help="the replica set (pairing) to size, e.g. h100-70b-w4a16")
    parser.add_argument("--trace", default="code,conv", help="traces, as duet replay reads them")
    parser.add_argument("--rate-scale", type=float, default=1.0, help="multiply the trace's arrival rate")
    parser.add_argument("--target", type=float, default=0.99, help="the good share to meet, in (0, 1]")
    parser.add_argument("--policy", default="duet", help="the policy whose fleet the plan gives (and writes)")
    parser.add_argument("--baselines", default=",".join(BASELINES), help="policies to size alongside (comma-separated)")
    parser.add_argument("--all-standard", default="always-standard",
                        help="the policy sized on standard-only fleets (what a team without a fast variant runs)")
    parser.add_argument("--span", type=float, default=600.0, help="trace seconds each seed replays")
    parser.add_argument("--search-seeds", type=int, default=3, help="seeds of the tuning window every fleet is replayed on")
    parser.add_argument("--check-seeds", type=int, default=5, help="held-out seeds the fleet found is replayed on")
    parser.add_argument("--max-replicas", type=int, default=16, help="the most replicas per variant searched")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prior-error", type=float, default=0.3, help="as duet replay's")
    parser.add_argument("--length-quantile", type=float, default=0.5, help="as duet replay's")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes, one policy each (results identical)")
    parser.add_argument("--out", type=Path, help="write the results (with the command) to this JSON file")
    parser.add_argument("--write-config", type=Path, metavar="IN", help="a Duet config to write the plan's counts into")
    parser.add_argument("--to", type=Path, metavar="OUT", help="with --write-config: the config to write")
    parser.add_argument("--model", help="with --write-config: the model to size (default: the config's only one)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        spec = _spec(args)
        policies = _policies(args)
        config_text = _config_text(args)
        if config_text is not None:
            fleet_config.check(config_text, str(args.write_config), _profiles(spec), args.model)
    except (ValueError, OSError, ConfigError) as exc:  # before any replay
        print(f"duet plan: {exc}", file=sys.stderr)
        return 2
    plans = plan_all(spec, policies, args.jobs)
    results = assemble(spec, plans, policy=args.policy, command=command(args))
    if args.out:
        write(results, args.out)
    print(f"{args.trace} x{args.rate_scale:g} on {args.replicas}, target {args.target:.0%} good")
    print("\n".join(table(results)))
    fleet = fleet_of(results["plans"][args.policy])
    if config_text is None:
        return 0
    if fleet is None:
        print(f"duet plan: {args.policy} met the target with no fleet up to {args.max_replicas} replicas per variant; "
              f"{args.to} not written", file=sys.stderr)
        return 1
    utilisation = results["plans"][args.policy].get("utilisation")
    args.to.write_text(fleet_config.with_counts(config_text, str(args.write_config), fleet.counts, _profiles(spec),
                                                command(args), args.model, utilisation))
    print(f"{args.to}: replica_count {fleet}, autoscaling utilisation {utilisation} if the model autoscales "
          f"(duet deploy render --config {args.to} ...)")
    return 0


def _spec(args: argparse.Namespace) -> PlanSpec:
    if args.replicas not in REPLICA_SETS:
        raise ValueError(f"unknown replica set '{args.replicas}' (known: {', '.join(sorted(REPLICA_SETS))})")
    if not 0 < args.target <= 1 or args.rate_scale <= 0 or args.span <= 0 or args.max_replicas < 1:
        raise ValueError("--target in (0, 1], --rate-scale and --span > 0, --max-replicas >= 1")
    if min(args.search_seeds, args.check_seeds) < 1:
        raise ValueError("--search-seeds and --check-seeds >= 1")
    if {v.name for v in REPLICA_SETS[args.replicas].variants} != {"standard", "fast"}:
        raise ValueError(f"replica set '{args.replicas}': duet plan sizes a standard and a fast variant")
    return PlanSpec(args.trace, args.replicas, args.target, args.rate_scale, _window(TUNING, args.span),
                    args.search_seeds, _window(HELDOUT, args.span), args.check_seeds, args.max_replicas, args.seed,
                    args.prior_error, args.length_quantile)


def _profiles(spec: PlanSpec) -> dict[str, str]:
    """variant -> the profile its replicas were replayed with (a launch profile of the same name)."""
    return {v.name: v.profile for v in spec.replicas.variants}


def _window(window: Window, span_s: float) -> Window:
    return Window(window.name, window.start_s, span_s, window.shift_s)


def _policies(args: argparse.Namespace) -> list[tuple[str, bool]]:
    """(policy, standard only): the plan's, the baselines, the all-standard one."""
    baselines = [p for p in args.baselines.split(",") if p and p != args.policy]
    return [(args.policy, False), *((p, False) for p in baselines), *([(args.all_standard, True)]
                                                                      if args.all_standard else [])]


def _config_text(args: argparse.Namespace) -> str | None:
    if (args.write_config is None) != (args.to is None):
        raise ValueError("--write-config IN and --to OUT go together")
    return None if args.write_config is None else args.write_config.read_text()


def command(args: argparse.Namespace) -> str:
    """The command that reruns this plan (--jobs and the config files left out: they change no result)."""
    flags = [f"--replicas {args.replicas}", f"--trace {args.trace}", f"--rate-scale {args.rate_scale:g}",
             f"--target {args.target:g}", f"--policy {args.policy}", f"--baselines {args.baselines}",
             f"--all-standard {args.all_standard}", f"--span {args.span:g}", f"--search-seeds {args.search_seeds}",
             f"--check-seeds {args.check_seeds}", f"--max-replicas {args.max_replicas}", f"--seed {args.seed}",
             f"--prior-error {args.prior_error:g}", f"--length-quantile {args.length_quantile:g}"]
    return " ".join(["duet plan", *flags])
