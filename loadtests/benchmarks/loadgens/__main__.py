"""``python -m loadtests.benchmarks.loadgens`` (``make bench-loadgens``): vllm bench serve and AIPerf
against Duet over simulated replicas, each compared with Duet's numbers; writes
docs/results/loadgens.json, from which ``python -m loadtests.sections`` renders its section of
docs/benchmarks.md. Exits 1 if a tool disagrees."""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

from loadtests.benchmarks.loadgens.document import RESULTS, run_record, section, write_results
from loadtests.benchmarks.loadgens.run import REPO, TIME_SCALE, LoadgenError, Settings, run
from loadtests.benchmarks.loadgens.tools import AIPERF, VLLM_BENCH, VLLM_BENCH_RESPONSES, Workload
from loadtests.benchmarks.overhead.report.results import cpu_model
from loadtests.launch.stack import StackError
from serving.hardware import this_machine
from serving.local_model import LocalModelPaths, default_cache_dir

TOOLS = {"vllm-bench": VLLM_BENCH, "vllm-bench-responses": VLLM_BENCH_RESPONSES, "aiperf": AIPERF}
DEFAULT = Workload()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.benchmarks.loadgens", description=__doc__)
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, from {','.join(TOOLS)}")
    parser.add_argument("--requests", type=int, default=DEFAULT.requests)
    parser.add_argument("--rate", type=float, default=DEFAULT.rate_per_s, help="requests per second (Poisson)")
    parser.add_argument("--run-dir", type=Path, default=REPO / "runs" / "bench-loadgens")
    parser.add_argument("--vllm-python", type=Path, default=REPO / ".venv-vllm" / "bin" / "python")
    parser.add_argument("--aiperf", type=Path, default=REPO / ".venv-bench-aiperf" / "bin" / "aiperf")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--no-docs", action="store_true", help="do not write the results file (the docs' source)")
    parser.add_argument("--command-label", default=None, help="the command quoted in the docs")
    parser.add_argument("--nice", type=int, default=-10, help="niceness of the run and all it starts (root only)")
    return parser


def _raise_priority(niceness: int) -> int:
    """Run this process and everything it starts at ``niceness`` where allowed (root); return the
    niceness in effect. Other work on this shared 2-core machine otherwise delays the client now
    and then by hundreds of ms (seen here at load average 7), which the tool then reports as TTFT
    the gateway never saw."""
    try:
        return os.nice(niceness - os.nice(0))
    except PermissionError:
        return os.nice(0)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names = [n.strip() for n in args.tools.split(",") if n.strip()]
    if unknown := [n for n in names if n not in TOOLS]:
        print(f"unknown tool(s) {unknown}; known: {sorted(TOOLS)}", file=sys.stderr)
        return 2
    workload = Workload(requests=args.requests, rate_per_s=args.rate)
    tokenizer = LocalModelPaths(default_cache_dir()).model_dir
    if not (tokenizer / "tokenizer.json").exists():
        print(f"no local model at {tokenizer}: `make local-model` builds it (the tools need its tokenizer)",
              file=sys.stderr)
        return 2
    settings = Settings(args.run_dir, tuple(TOOLS[n] for n in names), workload, tokenizer, args.vllm_python, args.aiperf)
    niceness = _raise_priority(args.nice)
    load_before = os.getloadavg()[0]
    try:
        runs = run(settings, say=lambda line: print(line, file=sys.stderr, flush=True))
    except (LoadgenError, StackError) as error:
        print(f"bench-loadgens: {error}", file=sys.stderr)
        return 2
    hardware = this_machine()
    results = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": args.command_label
        or "python -m loadtests.benchmarks.loadgens " + shlex.join(sys.argv[1:] if argv is None else argv),
        "hardware": {"hardware_class": hardware.hardware_class, "cpu_flags": list(hardware.cpu_flags),
                     "cpu_model": cpu_model(), "cores": os.cpu_count()},
        "load_average": [load_before, os.getloadavg()[0]],
        "versions": {"duet": version("duet"), "python": platform.python_version(),
                     **{("aiperf" if r.report.tool == AIPERF else "vllm"): r.report.version for r in runs}},
        "workload": {"requests": workload.requests, "rate_per_s": workload.rate_per_s,
                     "input_tokens": workload.input_tokens, "output_tokens": workload.output_tokens,
                     "seed": workload.seed},
        "time_scale": TIME_SCALE,
        "niceness": niceness,
        "runs": [run_record(r) for r in runs],
    }
    text = section(results)
    print(text)
    if not args.no_docs:
        write_results(args.results, results)
        print(f"wrote {args.results}; `python -m loadtests.sections` renders the docs from it", file=sys.stderr)
    return 0 if all(r.agree for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
