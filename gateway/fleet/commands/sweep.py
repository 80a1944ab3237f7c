"""``duet replay --sweep`` / ``--sweep-search``: offered load from light to past the knee.

    duet replay --replicas h100-70b:standard=1,fast=3 --compare --window tuning --seeds 5 \\
        --sweep 0.35,0.6,0.9,1.2,1.5,2.0 --jobs 2 --out docs/results/knee/h100-70b-tuning.json
    duet replay ... --sweep-search 0.25:4 [--sla sla.json] [--search-steps 4]

With a sweep, ``--duration`` is the window's trace seconds (each load replays them in
duration / load seconds) and ``--rate-scale`` is not used: the loads are the rate scales.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from gateway.fleet.commands.replay_args import COMPARED, DEFAULT_DURATION, DEFAULT_SHIFT, DEFAULT_START
from gateway.fleet.replay.windows import WINDOWS, Window
from gateway.fleet.sweep import sla
from gateway.fleet.sweep.render import crossing_table, share_table
from gateway.fleet.sweep.results import SweptLoads, assemble, merge
from gateway.fleet.sweep.run import SweepSpec, Task, run_tasks
from gateway.fleet.sweep.search import Bracket
from gateway.fleet.sweep.sla import DEFAULT_LEVELS, good_share_at_least
from gateway.fleet.world.policies import policy_name


def sweeping(args: argparse.Namespace) -> bool:
    return bool(args.sweep or args.sweep_search)


def run(args: argparse.Namespace) -> int:
    try:
        results = _sweep(args, sla.load(args.sla) if args.sla else ())
    except ValueError as exc:  # SlaError included
        print(f"duet replay: {exc}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(results, handle, indent=1)
            handle.write("\n")
    if args.json:
        print(json.dumps(results))
    else:
        window = results["window"]
        print(f"{args.trace} on {args.replicas}, window {window['name']} (trace seconds {window['covered_s'][0]:g}-"
              f"{window['covered_s'][1]:g} over {args.seeds} seeds), virtual time")
        if results["kind"] == "grid":
            print(share_table(results))
            print()
        print(crossing_table(results))
    return 0


def _sweep(args: argparse.Namespace, sets: tuple[Any, ...]) -> dict[str, Any]:
    if args.sweep and args.sweep_search:
        raise ValueError("--sweep and --sweep-search: choose one")
    spec = SweepSpec(args.trace, args.replicas, _policies(args), _window(args), args.seeds, args.seed,
                     args.prior_error, args.length_quantile, args.forced_length, args.unnamed_share,
                     tuple(args.keyed_tasks))
    loads: tuple[float, ...] = ()
    bracket = None
    if args.sweep:
        loads = tuple(sorted({_positive(text) for text in args.sweep.split(",")}))
        if len(loads) < 2:
            raise ValueError("--sweep needs at least two loads")
    else:
        low, _, high = args.sweep_search.partition(":")
        bracket = Bracket(_positive(low), _positive(high), args.search_steps)
        sets = sets or tuple(good_share_at_least(level) for level in DEFAULT_LEVELS)
    written = _written(args, spec.policies)
    rerun = spec.policies if written is None else tuple(args.rerun.split(","))
    tasks = [Task(spec, policy, k, loads, bracket, tuple(sets) if bracket else ())
             for policy in rerun for k in range(spec.seeds)]
    done = run_tasks(tasks, args.jobs)
    fresh = assemble(dataclasses.replace(spec, policies=rerun), done, command=command(args), levels=DEFAULT_LEVELS,
                     sets=sets, swept=SweptLoads(loads, bracket))
    return fresh if written is None else merge(written, fresh, [policy_name(p) for p in rerun])


def _written(args: argparse.Namespace, policies: tuple[str, ...]) -> dict[str, Any] | None:
    """``--rerun``: the --out file this very sweep wrote, whose other policies' results stand."""
    if args.rerun is None:
        return None
    if not args.out:
        raise ValueError("--rerun needs --out (the results file to update)")
    if unknown := set(args.rerun.split(",")) - set(policies):
        raise ValueError(f"--rerun: not in this sweep: {', '.join(sorted(unknown))}")
    try:
        with open(args.out) as handle:
            written: dict[str, Any] = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--rerun: cannot read {args.out}: {exc}") from exc
    if written.get("command") != command(args):
        raise ValueError(f"--rerun: {args.out} was not written by this sweep: rerun every policy instead")
    return written


def _policies(args: argparse.Namespace) -> tuple[str, ...]:
    if args.policies:
        return tuple(dict.fromkeys(filter(None, args.policies.split(","))))
    return tuple(p for p in COMPARED if p != args.policy) + (args.policy,) if args.compare else (args.policy,)


def _window(args: argparse.Namespace) -> Window:
    if args.window is None:
        return Window("custom", args.start, args.duration, args.shift)
    if (args.start, args.duration, args.shift) != (DEFAULT_START, DEFAULT_DURATION, DEFAULT_SHIFT):
        raise ValueError(f"--window {args.window} sets its own --start, --duration and --shift")
    return WINDOWS[args.window]


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a load: {text!r}") from None
    if not value > 0:
        raise ValueError(f"a load must be > 0, got {text!r}")
    return value


def command(args: argparse.Namespace) -> str:
    """The command that reruns this sweep (--jobs left out: it changes no result)."""
    compare = "--compare " if args.compare else ""
    policies = f"--policies {args.policies}" if args.policies else f"{compare}--policy {args.policy}"
    window = (f"--window {args.window}" if args.window else
              f"--start {args.start:g} --duration {args.duration:g} --shift {args.shift:g}")
    how = (f"--sweep {args.sweep}" if args.sweep else f"--sweep-search {args.sweep_search} --search-steps {args.search_steps}")
    flags = [f"--trace {args.trace}", f"--replicas {args.replicas}", policies, how,
             f"--sla {args.sla}" if args.sla else "", window, f"--seeds {args.seeds}", f"--seed {args.seed}",
             f"--prior-error {args.prior_error:g}", "--forced-length" if args.forced_length else "",
             f"--length-quantile {args.length_quantile:g}" if args.length_quantile != 0.5 else "",
             f"--unnamed-share {args.unnamed_share:g}" if args.unnamed_share else "",
             f"--keyed-tasks {','.join(args.keyed_tasks)}" if args.keyed_tasks else ""]
    return " ".join(["duet replay", *filter(None, flags)])
