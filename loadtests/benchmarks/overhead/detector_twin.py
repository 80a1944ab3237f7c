"""What task detection costs the running gateway: its CPU per request with the default detector
against the same config with detection off (``bench`` against ``bench-detector-off``), alternated
so a slow moment of the machine falls on both; writes docs/results/detector-cpu-cost.json.

    .venv/bin/python -m loadtests.benchmarks.overhead.detector_twin [--rounds 3] [--seconds 10]

Each round measures both with ``cpu_cost`` (``duet serve`` in front of nginx, wrk, the gateway's
own CPU seconds over requests answered), non-stream, the order flipped every round. Issue #34's
goal: the detector's twin within 10% of detector-off."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from loadtests.benchmarks.overhead.cpu_cost import run as cpu_cost
from serving.hardware import cpu_flags, hardware_of

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results" / "detector-cpu-cost.json"
CONFIGS = ("bench", "bench-detector-off")
GOAL_RATIO = 1.10


def measure(rounds: int, seconds: float) -> list[dict[str, float]]:
    out = []
    for k in range(rounds):
        row: dict[str, float] = {}
        for config in CONFIGS if k % 2 == 0 else reversed(CONFIGS):
            with tempfile.TemporaryDirectory(prefix="duet-detector-twin-") as tmp:
                Path(tmp).chmod(0o755)  # nginx's worker reads its files here
                (cost,) = cpu_cost(Path(tmp), ["non-stream"], seconds, 64, 1, 0, None, config)
            row[config] = round(cost.us_per_request, 1)
        out.append(row)
    return out


def render(results: dict[str, Any]) -> str:
    lines = [f"`{results['command']}` on {results['hardware_class']}: the gateway's CPU per non-stream request, "
             f"the default ({results['detector']}) detector against detection off, {len(results['rounds'])} rounds "
             "alternated. Goal (issue #34): within 10%.", "",
             "| round | detector on µs | detector off µs | on / off |", "|---|---|---|---|"]
    for k, row in enumerate(results["rounds"], 1):
        lines.append(f"| {k} | {row['bench']:.1f} | {row['bench-detector-off']:.1f} | "
                     f"{row['bench'] / row['bench-detector-off']:.2f} |")
    median = results["median_ratio"]
    lines += ["", f"Median on / off: **{median:.2f}** — goal {'met' if median <= GOAL_RATIO else 'missed'}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rounds = measure(args.rounds, args.seconds)
    # The bench config leaves routing.task_detector.kind at its default: the blend detector.
    results = {"command": f"python -m loadtests.benchmarks.overhead.detector_twin --rounds {args.rounds} "
                          f"--seconds {args.seconds:g}",
               "hardware_class": hardware_of(cpu_flags()).hardware_class, "detector": "blend", "rounds": rounds,
               "median_ratio": round(statistics.median(r["bench"] / r["bench-detector-off"] for r in rounds), 3)}
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
