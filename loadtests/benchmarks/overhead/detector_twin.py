"""What task detection costs the running gateway: its CPU per request with the default detector
against the same config with detection off (``bench`` against ``bench-detector-off``), and with
the detector read in Python with numpy's arithmetic instead of compiled (``bench-detector-numpy``, what the default
serves with where no C compiler built ``duet detect native``), taking turns so a slow moment of the
machine falls on all; writes docs/results/detector-cpu-cost.json.

    .venv/bin/python -m loadtests.benchmarks.overhead.detector_twin [--rounds 10] [--seconds 4]

The gateways (``duet serve`` in front of one nginx, all pinned to the gateway core) run for the
whole measurement, and each round drives one after the other with wrk for ``seconds`` (non-stream,
each first in turn), reading the driven gateway's own CPU seconds over the requests it answered
(``cpu_cost``'s measure). Started once and driven in short turns, they see the same moments of the
machine: a ten-minute drift of this VM's speed (the same detector's latency moved by 2x between
runs an hour apart) falls on both sides of each round's ratio, where one gateway started per
measurement saw it on one side only. Issue #34's goal: the detector's twin within 10% of
detector-off."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from gateway.detect import native
from loadtests.benchmarks.overhead.cpu_cost import CpuCost, measure_mode, start_duet
from loadtests.benchmarks.overhead.measure.run import start_backend
from loadtests.benchmarks.overhead.measure.wrk import render_script
from loadtests.benchmarks.overhead.stack.canned import API_KEY, request_body
from serving.hardware import cpu_flags, hardware_of

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results" / "detector-cpu-cost.json"
# The default config (its detector compiled where `duet detect native` built it), the same read in
# Python with numpy's arithmetic, and detection off.
CONFIGS = ("bench", "bench-detector-numpy", "bench-detector-off")
GOAL_RATIO = 1.10
CONNECTIONS = 64


def measure(rounds: int, seconds: float, gateway_core: int = 1, load_core: int = 0) -> list[dict[str, float]]:
    out = []
    with tempfile.TemporaryDirectory(prefix="duet-detector-twin-") as tmp, ExitStack() as running:
        run_dir = Path(tmp)
        run_dir.chmod(0o755)  # nginx's worker reads its files here
        backend, backend_url = start_backend(run_dir, load_core)
        running.callback(backend.stop)
        gateways = {}
        for config in CONFIGS:
            launch, process = start_duet(run_dir, backend_url, gateway_core, config, name=config)
            running.callback(process.stop)
            gateways[config] = (launch.base_url, process.pid)
        script = run_dir / "wrk-non-stream.lua"
        script.write_text(render_script(request_body(False), API_KEY))
        for k in range(rounds):
            row: dict[str, float] = {}
            for config in CONFIGS[k % len(CONFIGS):] + CONFIGS[:k % len(CONFIGS)]:  # each first in turn
                base_url, pid = gateways[config]
                cost = CpuCost("non-stream", *measure_mode(base_url, script, pid, seconds, CONNECTIONS, load_core))
                row[config] = round(cost.us_per_request, 1)
            out.append(row)
    return out


def render(results: dict[str, Any]) -> str:
    numpy = "median_ratio_numpy" in results  # files before the compiled core have two gateways
    core = results.get("core", "numpy")
    served = (f"its {results['compiled']} compiled" if core == "native" and "compiled" in results
              else f"its arithmetic {core}")
    lines = [f"`{results['command']}` on {results['hardware_class']}: the gateway's CPU per non-stream request, "
             f"the default ({results['detector']}) detector, {served}"
             + (", and the same detector read in Python with numpy's arithmetic," if numpy else "")
             + f" against detection off, {len(results['rounds'])} rounds alternated between the gateways, all "
             "running throughout. Goal (issue #34): within 10%.", ""]
    if numpy:
        lines += ["| round | detector on µs | on, numpy µs | detector off µs | on / off | numpy / off |",
                  "|---|---|---|---|---|---|"]
    else:
        lines += ["| round | detector on µs | detector off µs | on / off |", "|---|---|---|---|"]
    for k, row in enumerate(results["rounds"], 1):
        off = row["bench-detector-off"]
        if numpy:
            lines.append(f"| {k} | {row['bench']:.1f} | {row['bench-detector-numpy']:.1f} | {off:.1f} | "
                         f"{row['bench'] / off:.2f} | {row['bench-detector-numpy'] / off:.2f} |")
        else:
            lines.append(f"| {k} | {row['bench']:.1f} | {off:.1f} | {row['bench'] / off:.2f} |")
    median = results["median_ratio"]
    lines += ["", f"Median on / off: **{median:.2f}** — goal {'met' if median <= GOAL_RATIO else 'missed'}"
              + (f"; with numpy's arithmetic {results['median_ratio_numpy']:.2f}." if numpy else ".")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rounds = measure(args.rounds, args.seconds)
    # The bench config leaves routing.task_detector.kind at its default: the blend detector.
    results = {"command": f"python -m loadtests.benchmarks.overhead.detector_twin --rounds {args.rounds} "
                          f"--seconds {args.seconds:g}",
               "hardware_class": hardware_of(cpu_flags()).hardware_class, "detector": "blend",
               # What `bench` (core: auto) served with: the gateways share this machine's build.
               "core": "numpy" if native.load() is None else "native", "rounds": rounds,
               **({"compiled": native.COMPILED} if native.load() is not None else {}),
               "median_ratio": round(statistics.median(r["bench"] / r["bench-detector-off"] for r in rounds), 3),
               "median_ratio_numpy": round(statistics.median(r["bench-detector-numpy"] / r["bench-detector-off"]
                                                             for r in rounds), 3)}
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
