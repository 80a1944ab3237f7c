"""``python -m loadtests.benchmarks.overhead``: measure gateway overhead and print the table, the goals,
and one JSON line per gateway and mode (last, so scripts can read them with ``tail``)."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from loadtests.benchmarks.overhead.measure.machine import describe_busy
from loadtests.benchmarks.overhead.measure.phases import PhasePlan
from loadtests.benchmarks.overhead.measure.run import GATEWAYS, OPTIONAL_GATEWAYS, RunSettings, run
from loadtests.benchmarks.overhead.report.results import RESULTS, Host, RunRecord
from loadtests.benchmarks.overhead.report.results import write as write_results
from loadtests.benchmarks.overhead.report.summary import (
    detection_goals,
    goals,
    goals_text,
    json_lines,
    production_goals,
    text_table,
)

ROOT = Path(__file__).resolve().parents[3]


def _gateways(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in GATEWAYS + OPTIONAL_GATEWAYS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown gateway(s) {unknown}; known: {GATEWAYS + OPTIONAL_GATEWAYS}")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.benchmarks.overhead", description=__doc__)
    parser.add_argument("--gateways", type=_gateways, default=GATEWAYS,
                        help=f"comma-separated, from {','.join(GATEWAYS + OPTIONAL_GATEWAYS)} (direct always runs)")
    parser.add_argument("--warmup-s", type=float, default=2.0)
    parser.add_argument("--latency-s", type=float, default=4.0)
    parser.add_argument("--throughput-s", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--gateway-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)
    parser.add_argument("--wait-quiet-s", type=float, default=0.0,
                        help="wait up to this long for both cores to be under 15%% busy before starting")
    parser.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "bench-overhead")
    parser.add_argument("--litellm-venv", type=Path, default=ROOT / ".venv-bench-litellm")
    parser.add_argument("--vllm-router-venv", type=Path, default=ROOT / ".venv-bench-vllm-router")
    parser.add_argument("--no-docs", action="store_true", help="do not write the results file (the docs' source)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the run's record, which the section is rendered from")
    parser.add_argument("--command-label", default=None,
                        help="the command quoted in the docs (default: this command line)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    plan = PhasePlan(args.warmup_s, args.latency_s, args.throughput_s, args.connections, args.load_core)
    settings = RunSettings(args.run_dir, args.gateways, args.litellm_venv, args.vllm_router_venv,
                           args.gateway_core, plan, args.wait_quiet_s)
    result = run(settings, say=lambda line: print(line, file=sys.stderr, flush=True))
    ceiling = ", ".join(f"{mode} {r.rps:.0f} req/s" for mode, r in result.backend_ceiling.items())
    print(f"\nmachine busy before the run (other work): {describe_busy(result.busy_before)}")
    print(f"backend ceiling (nginx alone on core {plan.load_core}): {ceiling}")
    print(text_table(result.measurements, result.skipped))
    print("\ngoals (issues #3 and #20):\n" + goals_text(goals(result.measurements)))
    print("\ngoals of the production path (issue #19):\n" + goals_text(production_goals(result.measurements)))
    print("\nthe task detector's cost (issue #28):\n" + goals_text(detection_goals(result.measurements)))
    if not args.no_docs:
        used = shlex.join(sys.argv[1:] if argv is None else argv)
        command = args.command_label or f"python -m loadtests.benchmarks.overhead {used}"
        record = RunRecord(result, command.strip(), plan, args.gateway_core, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           Host.here())
        write_results(record, args.results)
        print(f"\nwrote {args.results}; `python -m loadtests.sections` renders the docs from it")
    print()
    for line in json_lines(result.measurements):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
