"""``duet plan-day``: a day of traffic through the fleet ``duet plan`` sized for its peak, through
the plan per period, and through the fleet Duet's gauge and an HPA scale (``daily.py``), with
the cost and the good requests of each.

    duet plan-day --plan docs/results/capacity/h100-70b-w4a16-long-context.json --seeds 2 --jobs 2 \\
        --out docs/results/capacity/day/h100-70b-w4a16.json
"""

from __future__ import annotations

import argparse
import json
import sys

from gateway.fleet.capacity.daily import DaySpec, assemble, replay_days
from gateway.fleet.capacity.day import DiurnalCurve
from gateway.fleet.replay.autoscale import STARTUP_S


def run(args: argparse.Namespace) -> int:
    try:
        spec = _spec(args)
    except (ValueError, OSError, KeyError) as exc:
        print(f"duet plan-day: {exc}", file=sys.stderr)
        return 2
    results = assemble(spec, replay_days(spec, args.jobs), command(args))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    s = results["summary"]
    print(f"{spec.replica_set}, {spec.trace}, peak x{spec.peak_scale:g}, {args.hours:g} h, {spec.seeds} seeds "
          f"({spec.window} stretches)")
    print(f"fixed at the peak {dict(spec.peak_fleet)}: ${s['fixed_usd']:.0f}, {s['fixed_good']:.2%} good")
    print(f"plan per period: ${s['period_plan_usd']:.0f} ({s['period_plan_vs_fixed']:.2f}x)")
    print(f"autoscaled: ${s['autoscaled_usd']:.0f} ({s['autoscaled_vs_fixed']:.2f}x), {s['autoscaled_good']:.2%} good "
          f"± {s['autoscaled_good_ci95']:.2%}")
    return 0


def _spec(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    plan = json.loads(args.plan.read_text())
    duet = plan["plans"][plan["policy"]]
    if duet["fleet"] is None:
        raise ValueError(f"{args.plan}: {plan['policy']} found no fleet to start from")
    if args.seeds < 1 or args.hours <= 0 or args.period <= 0:
        raise ValueError("--seeds >= 1, --hours and --period > 0")
    return DaySpec(plan["replica_set"], plan["trace"], plan["rate_scale"], plan["target"], plan["policy"],
                   duet["fleet"], duet.get("utilisation") or {}, DiurnalCurve(args.peak_to_trough, args.trough_hour),
                   args.period, args.hours * 3600.0, args.seeds, args.seed, plan["prior_error"],
                   plan["length_quantile"], STARTUP_S if args.startup is None else args.startup,
                   stabilization_s=args.scale_down, scale_up_s=args.scale_up, max_replicas=args.max_replicas,
                   window=args.window)


def command(args: argparse.Namespace) -> str:
    """The command that reruns this day (--jobs and --out left out: they change no result)."""
    flags = [f"--plan {args.plan}", f"--peak-to-trough {args.peak_to_trough:g}", f"--trough-hour {args.trough_hour:g}",
             f"--period {args.period:g}", f"--hours {args.hours:g}", f"--window {args.window}", f"--seeds {args.seeds}",
             f"--seed {args.seed}", f"--scale-up {args.scale_up:g}", f"--scale-down {args.scale_down:g}",
             f"--max-replicas {args.max_replicas}"]
    if args.startup is not None:
        flags.append(f"--startup {args.startup:g}")
    return " ".join(["duet plan-day", *flags])
