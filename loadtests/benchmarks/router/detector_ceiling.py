"""What a real sentence encoder would buy the task detector on unfamiliar sources; writes
docs/results/task-detector-ceiling.json (``make bench-detector-ceiling``: ~40 min of one core for
the encodings the first time, then minutes).

    .venv/bin/python -m loadtests.benchmarks.router.detector_ceiling

Leave-one-source-out on one capped subset for three recipes (``gateway.detect.training.encoder_ceiling``):
the encoder's outputs, the shipped blend detector's row, and both; the same fit, abstention chosen
nested on the other sources, and goals as the by-source benchmark. Besides the goals, each
source's top-1 accuracy (abstention aside): how often the representation alone gets the task."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from gateway.detect.training import PROMPTS
from gateway.detect.training.by_source import worst
from gateway.detect.training.encoder_ceiling import CAP, MAX_TOKENS, RECIPES, encodings, judge, subset
from gateway.detect.vectors import StaticVectors
from loadtests.benchmarks.router.detector_by_source import render as render_by_source
from serving.hardware import cpu_flags, hardware_of

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results" / "task-detector-ceiling.json"


def run(prompts: Path) -> dict[str, Any]:
    requests = subset(prompts)
    encoded = encodings(requests, log=lambda line: print(line, flush=True))
    vectors = StaticVectors.load()
    out: dict[str, Any] = {"command": "make bench-detector-ceiling", "cap_per_task_and_source": CAP,
                           "encoder_max_tokens": MAX_TOKENS, "requests": len(requests),
                           "hardware_class": hardware_of(cpu_flags()).hardware_class, "recipes": {}}
    for recipe in RECIPES:
        by_source = judge(recipe, requests, encoded, vectors, log=lambda line, r=recipe: print(f"{r}: {line}", flush=True))
        top1 = [r["top1"] for r in by_source.values()]
        out["recipes"][recipe] = {"by_source": by_source, "worst": worst(by_source),
                                  "top1": {"mean": round(float(np.mean(top1)), 4), "worst": round(float(min(top1)), 4)}}
    return out


def render(results: dict[str, Any]) -> str:
    """The top-1 comparison, then each recipe's per-source table (the by-source benchmark's)."""
    lines = [f"Leave-one-source-out on one subset ({results['requests']} requests: at most "
             f"{results['cap_per_task_and_source']} per task and source), hardware class {results['hardware_class']}; "
             f"encoder spans cut to {results['encoder_max_tokens']} tokens.", "",
             "| recipe | top-1 mean over sources | top-1 worst source | confident leak (worst) | reasoning kept (worst) "
             "| coding recall (worst) | extraction recall (worst) | chat to fast (worst) |",
             "|---|---|---|---|---|---|---|---|"]
    for recipe, report in results["recipes"].items():
        w = report["worst"]
        lines.append(f"| {recipe} | {report['top1']['mean']:.3f} | {report['top1']['worst']:.3f} | "
                     + " | ".join(f"{w[g]['value']:.3f} ({w[g]['source']})" for g in (
                         "confident_leak", "reasoning_kept", "coding_recall", "extraction_recall", "chat_fast")) + " |")
    lines += ["", render_by_source(results)]
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = run(args.prompts)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
