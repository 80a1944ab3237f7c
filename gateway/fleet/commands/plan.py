"""``duet plan``: the cheapest fleet per variant that meets a good-share target on a trace, for
Duet's policy, the baselines and an all-standard fleet, by replaying the router against the
simulator (``plan.py``); optionally written into a Duet config for ``duet deploy render``.

    duet plan --replicas h100-70b-w4a16 --trace code,conv --rate-scale 1 --target 0.99 --jobs 2 \\
        --out docs/results/capacity/h100-70b-w4a16.json --write-config duet.yaml --to duet.planned.yaml

With ``--tp``, ``--chunk`` or ``--roles``, each variant's TP size and chunk budget are searched too
(``capacity/layout.py``): per variant for Duet, and engine role mixes over its replicas
(``capacity/roles.py``), one uniform configuration for each baseline.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gateway.fleet.capacity import fleet_config
from gateway.fleet.capacity.layout import parse_options, space
from gateway.fleet.capacity.plan import PlanSpec, plan_all
from gateway.fleet.capacity.render import table
from gateway.fleet.capacity.results import assemble, fleet_of, write
from gateway.fleet.capacity.roles import parse_role_mixes
from gateway.fleet.replay.windows import HELDOUT, TUNING, Window
from gateway.fleet.world.replica_sets import REPLICA_SETS
from gateway.flow import ConfigError


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
    for name, plan in results["plans"].items():
        if "layout" in plan:
            print(f"{name}: " + ", ".join(f"{v} TP{d['tp']}" + ("" if d["chunk"] is None else f" chunk {d['chunk']}")
                                          for v, d in plan["layout"].items()))
    fleet = fleet_of(results["plans"][args.policy])
    if config_text is None:
        return 0
    if fleet is None:
        print(f"duet plan: {args.policy} met the target with no fleet up to {args.max_replicas} replicas per variant; "
              f"{args.to} not written", file=sys.stderr)
        return 1
    planned = planned_fleet(results["plans"][args.policy], _profiles(spec))
    args.to.write_text(fleet_config.with_counts(config_text, str(args.write_config), planned, command(args), args.model))
    print(f"{args.to}: replica_count {fleet}, engines {planned.engines}, autoscaling utilisation {planned.utilisation} "
          f"if the model autoscales (duet deploy render --config {args.to} ...)")
    if planned.groups:
        groups = "; ".join(f"{variant}: " + ", ".join(f"{g.count} x {g.engine}" for g in groups)
                           for variant, groups in planned.groups.items() if len(groups) > 1)
        print(f"{args.to}: engine groups ({results['plans'][args.policy]['roles']}) {groups or 'none: one engine each'}"
              + ("" if planned.disaggregation is None else f", split by rule {planned.disaggregation}")
              + "; each group renders as a Deployment of its own, autoscaled (if the model autoscales) on "
                "duet_desired_group_replicas: the variant's count split in these proportions")
    return 0


def planned_fleet(plan: dict[str, Any], profiles: dict[str, str]) -> fleet_config.PlannedFleet:
    """What a results file's plan (``plans.<policy>``, with a fleet) writes into a config: its
    counts, layout, engine groups and utilisation."""
    fleet = fleet_of(plan)
    if fleet is None:
        raise ValueError("the plan has no fleet")
    groups, rule = fleet_config.role_groups(plan)
    return fleet_config.PlannedFleet(fleet.counts, profiles, plan.get("utilisation"), _engines(plan.get("layout")),
                                     groups, rule)


def _spec(args: argparse.Namespace) -> PlanSpec:
    if args.replicas not in REPLICA_SETS:
        raise ValueError(f"unknown replica set '{args.replicas}' (known: {', '.join(sorted(REPLICA_SETS))})")
    if not 0 < args.target <= 1 or args.rate_scale <= 0 or args.span <= 0 or args.max_replicas < 1:
        raise ValueError("--target in (0, 1], --rate-scale and --span > 0, --max-replicas >= 1")
    if args.all_standard_max_replicas is not None and args.all_standard_max_replicas < 1:
        raise ValueError("--all-standard-max-replicas >= 1")
    if min(args.search_seeds, args.check_seeds) < 1:
        raise ValueError("--search-seeds and --check-seeds >= 1")
    if {v.name for v in REPLICA_SETS[args.replicas].variants} != {"standard", "fast"}:
        raise ValueError(f"replica set '{args.replicas}': duet plan sizes a standard and a fast variant")
    replicas = REPLICA_SETS[args.replicas]
    layouts = None
    if args.tp or args.chunk or args.roles:
        layouts = space(replicas, parse_options(args.tp, "--tp"), parse_options(args.chunk, "--chunk"),
                        parse_role_mixes(args.roles))
    return PlanSpec(args.trace, args.replicas, args.target, args.rate_scale, _window(TUNING, args.span),
                    args.search_seeds, _window(HELDOUT, args.span), args.check_seeds, args.max_replicas, args.seed,
                    args.prior_error, args.length_quantile, layouts, args.all_standard_max_replicas)


def _profiles(spec: PlanSpec) -> dict[str, str]:
    """variant -> the profile its replicas were replayed with (a launch profile of the same name)."""
    return {v.name: v.profile for v in spec.replicas.variants}


def _engines(layout: dict[str, dict[str, int | None]] | None) -> dict[str, dict[str, int]] | None:
    """The plan's layout as each variant's engine settings in a Duet config."""
    if layout is None:
        return None
    return {variant: {"tensor_parallel_size": d["tp"], **({} if d["chunk"] is None else {
        "max_num_batched_tokens": d["chunk"]})} for variant, d in layout.items() if d["tp"] is not None}


def _window(window: Window, span_s: float) -> Window:
    return Window(window.name, window.start_s, span_s, window.shift_s)


def _policies(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(policy, role): the plan's, the baselines, the all-standard one."""
    baselines = [p for p in args.baselines.split(",") if p and p != args.policy]
    return [(args.policy, "duet"), *((p, "baseline") for p in baselines), *([(args.all_standard, "all-standard")]
                                                                            if args.all_standard else [])]


def _config_text(args: argparse.Namespace) -> str | None:
    if (args.write_config is None) != (args.to is None):
        raise ValueError("--write-config IN and --to OUT go together")
    return None if args.write_config is None else args.write_config.read_text()


def command(args: argparse.Namespace) -> str:
    """The command that reruns this plan (--jobs and the config files left out: they change no result)."""
    baselines = args.baselines or "''"  # none, as a shell passes it (left out, the default baselines would run)
    flags = [f"--replicas {args.replicas}", f"--trace {args.trace}", f"--rate-scale {args.rate_scale:g}",
             f"--target {args.target:g}", f"--policy {args.policy}", f"--baselines {baselines}",
             f"--all-standard {args.all_standard}", f"--span {args.span:g}", f"--search-seeds {args.search_seeds}",
             f"--check-seeds {args.check_seeds}", f"--max-replicas {args.max_replicas}", f"--seed {args.seed}",
             f"--prior-error {args.prior_error:g}", f"--length-quantile {args.length_quantile:g}"]
    flags += [f"{flag} '{value}'" for flag, value in (("--tp", args.tp), ("--chunk", args.chunk), ("--roles", args.roles))
              if value]
    if args.all_standard_max_replicas is not None:
        flags.append(f"--all-standard-max-replicas {args.all_standard_max_replicas}")
    return " ".join(["duet plan", *flags])
