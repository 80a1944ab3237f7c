"""``duet plan-day``'s arguments: importable without what the day's replays run, so ``duet
plan-day --help`` answers at once. The command is ``plan_day.py``."""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.fleet.replay.windows import DAY_WINDOWS

PLAN_DAY_DOC = """``duet plan-day``: a day of traffic through the fleet ``duet plan`` sized for its peak, through
the plan per period, and through the fleet Duet's gauge and an HPA scale (``daily.py``), with
the cost and the good requests of each.

    duet plan-day --plan docs/results/capacity/h100-70b-w4a16-long-context.json --seeds 2 --jobs 2 \\
        --out docs/results/capacity/day/h100-70b-w4a16.json
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("plan-day", help="a day replayed: the peak's fixed fleet against the autoscaled one",
                                   description=PLAN_DAY_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", type=Path, required=True, help="a duet plan results file (its peak fleet and utilisation)")
    parser.add_argument("--peak-to-trough", type=float, default=3.0, help="the day's peak rate over its trough (assumed)")
    parser.add_argument("--trough-hour", type=float, default=4.0)
    parser.add_argument("--period", type=float, default=900.0, help="seconds per period of the day")
    parser.add_argument("--hours", type=float, default=24.0, help="hours replayed from midnight")
    parser.add_argument("--window", choices=sorted(DAY_WINDOWS), default="heldout",
                        help="which trace stretches the periods replay (tuning: for choosing settings)")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--startup", type=float, help="seconds from asking for a replica to its serving (default: 346)")
    parser.add_argument("--scale-up", type=float, default=0.0, help="the HPA's scale-up stabilisation window, s")
    parser.add_argument("--scale-down", type=float, default=300.0, help="the HPA's scale-down stabilisation window, s")
    parser.add_argument("--scale-up-pods", type=int, metavar="N", help="the HPA adds at most N replicas per "
                        "--scale-up-period (behavior.scaleUp.policies, type Pods; default: no cap)")
    parser.add_argument("--scale-up-period", type=float, default=60.0, help="seconds, for --scale-up-pods")
    parser.add_argument("--max-replicas", type=int, default=16, help="per variant")
    parser.add_argument("--fit", type=_fractions, metavar="F,..", help="size on a capacity curve fitted at these "
                        "fractions of the plan's rate (e.g. 0.333,0.5,0.75,1), on its tuning seeds, instead of "
                        "the plan's one utilisation")
    parser.add_argument("--warm-traffic-tasks", action="store_true",
                        help="keep a replica warm (parity's floor) only for the task types of the plan's traffic, "
                             "as the plan's search did (autoscaling.warm_tasks), not for every configured one")
    parser.add_argument("--floor-days", type=int, default=0, metavar="N",
                        help="hold a schedule floor under the gauge, learned from N tuning-window days (seeds "
                             "--seed + 1 .. + N; per period the median of their plans), asked for a start-up and "
                             "a scale-up window ahead (default 0: the reactive gauge alone)")
    parser.add_argument("--floor-margin", type=int, default=0, metavar="M",
                        help="the schedule floor M replicas under the history's median, left to the reactive part")
    parser.add_argument("--skip-fixed", action="store_true", help="count the peak's fixed fleet, do not replay it")
    parser.add_argument("--all-standard-plan", type=Path, metavar="PLAN",
                        help="a duet plan results file on the same traffic whose all-standard fleet on vLLM's "
                             "defaults is the comparator (default: --plan's), e.g. one searched further with "
                             "duet plan --all-standard-max-replicas")
    parser.add_argument("--rescore", type=Path, metavar="DAY",
                        help="replay nothing: count this plan-day results file's comparators again (from --plan "
                             "and --all-standard-plan) and write it back")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes, one seed each (results identical)")
    parser.add_argument("--out", type=Path, help="write the results (with the command) to this JSON file")
    parser.add_argument("--diagnose", type=int, metavar="INDEX", help="replay only the autoscaled day of seed "
                        "--seed + INDEX and print where it lost requests and money, hour by hour (no results file)")
    parser.add_argument("--readings", action="store_true",
                        help="with --diagnose and --fit: no replay; print, every two hours, the period's busy "
                             "replicas (a curve point's x) against the spread of the gauge's 15 s readings in it")
    parser.add_argument("--deployment-per-variant", action="store_true",
                        help="each variant one Deployment: shrinks blind to engine roles (default: one "
                             "Deployment per engine group on its share of the count, as duet deploy render writes)")


def _fractions(text: str) -> list[float]:
    """``0.333,0.5,1`` -> [0.333, 0.5, 1.0], each in (0, 1]."""
    try:
        values = [float(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': fractions of the plan's rate, e.g. 0.333,0.5,0.75,1") from None
    if not values or not all(0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"'{text}': each fraction in (0, 1]")
    return values
