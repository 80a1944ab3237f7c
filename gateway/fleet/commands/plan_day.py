"""``duet plan-day``: a day of traffic through the fleet ``duet plan`` sized for its peak, through
the plan per period, and through the fleet Duet's gauge and an HPA scale (``daily.py``), with
the cost and the good requests of each.

    duet plan-day --plan docs/results/capacity/h100-70b-w4a16-long-context.json --seeds 2 --jobs 2 \\
        --out docs/results/capacity/day/h100-70b-w4a16.json

With ``--diagnose INDEX`` it replays one seed's autoscaled day only and prints where it lost
(``day_diagnosis.py``); add ``--deployment-per-variant`` to see the same day with shrinks blind to
engine roles, or ``--readings`` (with ``--fit``) to see, without a replay, what the gauge reads
against what its curve was fitted on (``day_readings.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from gateway.fleet.capacity.curve import CurvePoint, curves_of, fit, layout_of, spec_of
from gateway.fleet.capacity.days import day_goals
from gateway.fleet.capacity.days.daily import DaySpec, assemble, replay_days, seed_day
from gateway.fleet.capacity.days.day import DiurnalCurve
from gateway.fleet.capacity.days.day_diagnosis import diagnose
from gateway.fleet.capacity.days.day_floor import as_config, floor_json, learned_floor
from gateway.fleet.capacity.days.day_readings import spread
from gateway.fleet.capacity.layout import own_layout
from gateway.fleet.capacity.plan import Replays
from gateway.fleet.capacity.search import Fleet
from gateway.fleet.replay.autoscale import STARTUP_S
from gateway.fleet.world.replica_sets import REPLICA_SETS


def run(args: argparse.Namespace) -> int:
    if args.rescore is not None:
        return _rescore(args)
    try:
        spec = _spec(args)
    except (ValueError, OSError, KeyError) as exc:
        print(f"duet plan-day: {exc}", file=sys.stderr)
        return 2
    plan = json.loads(args.plan.read_text())
    spec, points = _sized(spec, plan, args)
    if args.diagnose is not None and args.readings:
        day = seed_day(spec, args.diagnose)
        for variant, curve in spec.capacity.items():
            if curve.per_busy_replica > 0:
                print("\n".join(spread(spec, day, variant)))
        return 0
    if args.diagnose is not None:
        print("\n".join(diagnose(spec, args.diagnose)))
        return 0
    results = assemble(spec, replay_days(spec, args.jobs), command(args))
    if args.floor_days:
        results["floor"] = floor_json(spec, args.floor_days, args.floor_margin)
    if args.fit:
        results["capacity_fit"] = {"fractions": sorted(set(args.fit)), "points": [p.as_dict() for p in points],
                                   "fit": "per variant, least squares through (the model's busy replicas, replicas "
                                          "needed - 0.5), on the plan's tuning seeds"}
    results["against"] = day_goals.against(results["summary"]["autoscaled_usd"], spec.day_s, _comparators(args, plan))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    _report(spec, results, args.hours)
    return 0


def _comparators(args: argparse.Namespace, plan: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    other = None
    if args.all_standard_plan is not None:
        other = (str(args.all_standard_plan), json.loads(args.all_standard_plan.read_text()))
    return day_goals.comparators(plan, other)


def _rescore(args: argparse.Namespace) -> int:
    """The day results file's comparators counted again from the plans named, its days untouched
    (the comparators are counted, never replayed); its command then names the plans it used."""
    try:
        day = json.loads(args.rescore.read_text())
        if f"--plan {args.plan} " not in day["command"] + " ":
            raise ValueError(f"{args.rescore} was not made from --plan {args.plan}: {day['command']}")
        day["against"] = day_goals.against(day["summary"]["autoscaled_usd"], day["day_s"],
                                           _comparators(args, json.loads(args.plan.read_text())))
    except (ValueError, OSError, KeyError) as exc:
        print(f"duet plan-day: {exc}", file=sys.stderr)
        return 2
    words = day["command"].split(" --all-standard-plan ")[0].split()
    if args.all_standard_plan is not None:  # last, where ``command`` puts it
        words += ["--all-standard-plan", str(args.all_standard_plan)]
    day["command"] = " ".join(words)
    args.rescore.write_text(json.dumps(day, indent=1) + "\n")
    _print_against(day["against"])
    return 0


def _print_against(against: dict[str, Any]) -> None:
    for key, found in against.items():
        if found is not None:
            print(f"against {key} ({found['policy']} {found['fleet']}, ${found['usd']:.0f}): {found['ratio']:.2f}x")


def _sized(spec: DaySpec, plan: dict[str, Any], args: argparse.Namespace) -> tuple[DaySpec, tuple[CurvePoint, ...]]:
    """``spec`` with the warm task types and the capacity curve ``args`` ask for, and the curve's points."""
    if args.warm_traffic_tasks:  # the task types of the plan's tuning traffic, as its parity floor counted them
        planned = spec_of(plan)
        spec = dataclasses.replace(spec, warm_tasks=Replays(planned, plan["policy"], planned.search, 1).tasks)
    points: tuple[CurvePoint, ...] = ()
    if args.fit:
        points = fit_points(plan, args.fit)  # on the plan's tuning seeds, before any day is replayed
        spec = dataclasses.replace(spec, capacity=curves_of(points, [v.name for v in spec.replicas.variants]))
        print("capacity curve: " + ", ".join(f"{v} {c.intercept:+.2f} + {c.per_busy_replica:.2f} x busy"
                                             for v, c in spec.capacity.items()))
    if args.floor_days:  # on the curve just fitted, from tuning days only
        spec = dataclasses.replace(spec, schedule=learned_floor(spec, args.floor_days, args.floor_margin))
        print("schedule floor: " + ", ".join(f"{v} {len(s.steps)} steps, up to {s.most}" for v, s in spec.schedule.items()))
        print("  as duet.yaml's autoscaling.schedule_by_variant: " + json.dumps(as_config(spec.schedule)))
    return spec, points


def _report(spec: DaySpec, results: dict[str, Any], hours: float) -> None:
    s = results["summary"]
    print(f"{spec.replica_set}, {spec.trace}, peak x{spec.peak_scale:g}, {hours:g} h, {spec.seeds} seeds "
          f"({spec.window} stretches)")
    fixed_good = "not replayed" if s["fixed_good"] is None else f"{s['fixed_good']:.2%} good"
    print(f"fixed at the peak {dict(spec.peak_fleet)}: ${s['fixed_usd']:.0f}, {fixed_good}")
    print(f"plan per period: ${s['period_plan_usd']:.0f} ({s['period_plan_vs_fixed']:.2f}x)")
    print(f"autoscaled: ${s['autoscaled_usd']:.0f} ({s['autoscaled_vs_fixed']:.2f}x), {s['autoscaled_good']:.2%} good "
          f"± {s['autoscaled_good_ci95']:.2%}")
    _print_against(results["against"])


def fit_points(plan: dict[str, Any], fractions: list[float]) -> tuple[CurvePoint, ...]:
    """The curve's points for the plan's policy in its chosen layout and roles."""
    duet = plan["plans"][plan["policy"]]
    layout = layout_of(duet) or own_layout(REPLICA_SETS[plan["replica_set"]])
    peak = Fleet(duet["fleet"]["standard"], duet["fleet"]["fast"])
    return fit(spec_of(plan), plan["policy"], layout, peak, duet["search_share"], fractions)


def _spec(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    plan = json.loads(args.plan.read_text())
    duet = plan["plans"][plan["policy"]]
    if duet["fleet"] is None:
        raise ValueError(f"{args.plan}: {plan['policy']} found no fleet to start from")
    if args.seeds < 1 or args.hours <= 0 or args.period <= 0:
        raise ValueError("--seeds >= 1, --hours and --period > 0")
    if args.floor_days < 0 or args.floor_margin < 0:
        raise ValueError("--floor-days and --floor-margin >= 0")
    return DaySpec(plan["replica_set"], plan["trace"], plan["rate_scale"], plan["target"], plan["policy"],
                   duet["fleet"], duet.get("utilisation") or {}, DiurnalCurve(args.peak_to_trough, args.trough_hour),
                   args.period, args.hours * 3600.0, args.seeds, args.seed, plan["prior_error"],
                   plan["length_quantile"], STARTUP_S if args.startup is None else args.startup,
                   stabilization_s=args.scale_down, scale_up_s=args.scale_up, max_replicas=args.max_replicas,
                   window=args.window, layout=layout_of(duet), replay_fixed=not args.skip_fixed,
                   deployment_per_variant=args.deployment_per_variant, scale_up_pods=args.scale_up_pods,
                   scale_up_period_s=args.scale_up_period)


def command(args: argparse.Namespace) -> str:
    """The command that reruns this day (--jobs and --out left out: they change no result)."""
    flags = [f"--plan {args.plan}", f"--peak-to-trough {args.peak_to_trough:g}", f"--trough-hour {args.trough_hour:g}",
             f"--period {args.period:g}", f"--hours {args.hours:g}", f"--window {args.window}", f"--seeds {args.seeds}",
             f"--seed {args.seed}", f"--scale-up {args.scale_up:g}", f"--scale-down {args.scale_down:g}",
             f"--max-replicas {args.max_replicas}"]
    if args.scale_up_pods is not None:
        flags.append(f"--scale-up-pods {args.scale_up_pods} --scale-up-period {args.scale_up_period:g}")
    if args.startup is not None:
        flags.append(f"--startup {args.startup:g}")
    if args.fit:
        flags.append("--fit " + ",".join(f"{f:g}" for f in args.fit))
    if args.floor_days:
        flags.append(f"--floor-days {args.floor_days}" + (f" --floor-margin {args.floor_margin}" if args.floor_margin else ""))
    if args.skip_fixed:
        flags.append("--skip-fixed")
    if args.warm_traffic_tasks:
        flags.append("--warm-traffic-tasks")
    if args.deployment_per_variant:
        flags.append("--deployment-per-variant")
    if args.all_standard_plan is not None:
        flags += ["--all-standard-plan", str(args.all_standard_plan)]
    return " ".join(["duet plan-day", *flags])
