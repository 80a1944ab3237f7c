"""``duet plan``'s arguments: importable without what a plan runs (the replays, the simulator,
the priced replica sets), so ``duet plan --help`` answers at once. The command is ``plan.py``."""

from __future__ import annotations

import argparse
from pathlib import Path

PLAN_DOC = """``duet plan``: the cheapest fleet per variant that meets a good-share target on a trace, for
Duet's policy, the baselines and an all-standard fleet, by replaying the router against the
simulator (``plan.py``); optionally written into a Duet config for ``duet deploy render``.

    duet plan --replicas h100-70b-w4a16 --trace code,conv --rate-scale 1 --target 0.99 --jobs 2 \\
        --out docs/results/capacity/h100-70b-w4a16.json --write-config duet.yaml --to duet.planned.yaml

With --tp and --chunk the plan searches each variant's tensor parallelism and chunk budget too
(--tp 'fast=1,2,4 standard=4'): Duet per variant, each baseline one configuration for all its
replicas (the best it finds), the all-standard fleet the standard variant's options. With --roles
(split, pd+split) Duet also tries engine role mixes over its replicas at each TP combination:
chunk-budget groups per variant and standard replicas prefill-only (issue #36's layout, by rule).
"""
BASELINES = ("least-loaded", "llm-d-default", "production-stack-prefixaware", "round-robin", "static-split")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("plan", help="the cheapest replica count per variant meeting a target (replayed)",
                                   description=PLAN_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    parser.add_argument("--all-standard-max-replicas", type=int, metavar="N",
                        help="the all-standard fleet's own bound (default: --max-replicas): on vLLM's defaults it "
                             "may need many more replicas than a mixed fleet to meet the target")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prior-error", type=float, default=0.3, help="as duet replay's")
    parser.add_argument("--length-quantile", type=float, default=0.5, help="as duet replay's")
    parser.add_argument("--tp", metavar="VARIANT=N,..", help="TP sizes to search per variant, e.g. "
                        "'fast=1,2,4 standard=4' (default: each profile's own; a size must fit the GPUs' memory)")
    parser.add_argument("--chunk", metavar="VARIANT=N,..", help="chunk budgets (--max-num-batched-tokens) to search "
                        "per variant, e.g. 'fast=2048,8192' (default: each profile's own)")
    parser.add_argument("--roles", metavar="MIX,..", help="engine role mixes Duet may lay over its replicas, e.g. "
                        "'split,pd+split' (gateway/fleet/capacity/roles.py; baselines never get one)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes, one policy each (results identical)")
    parser.add_argument("--out", type=Path, help="write the results (with the command) to this JSON file")
    parser.add_argument("--write-config", type=Path, metavar="IN", help="a Duet config to write the plan's counts into")
    parser.add_argument("--to", type=Path, metavar="OUT", help="with --write-config: the config to write")
    parser.add_argument("--model", help="with --write-config: the model to size (default: the config's only one)")
