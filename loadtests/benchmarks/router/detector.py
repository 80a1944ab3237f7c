"""The words task detector's benchmark on its corpus's held-out splits: accuracy, leaks and the cost
of abstention; writes docs/results/task-detector.json. (What detection costs a request, for both
detectors: ``loadtests.benchmarks.router.detector_latency``.)

    .venv/bin/python -m loadtests.benchmarks.router.detector [--prompts ../shared/prompts]

Accuracy is measured on the held-out splits only (``test``: unseen prompts of seen templates and
public sets; ``test-template``: templates never trained or tuned on; ``gateway.detect.training.corpus``
says which split trained and which tuned what, and the results repeat it), at the shipped threshold and
floor, against the FP8 verdict of deploy/render/h100-70b.yaml (fast allowed chat, coding, agent,
extraction)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gateway.detect.training import PROMPTS, SPLIT_USES, confusions, corpus, evaluate, judge_all
from gateway.flow import TaskDetector

# The source-by-source section is registered beside this one (loadtests/sections/registry.py).
from loadtests.benchmarks.router.detector_by_source import RESULTS as BY_SOURCE_RESULTS  # noqa: F401
from loadtests.benchmarks.router.detector_by_source import render as render_by_source  # noqa: F401
from serving.hardware import cpu_flags, hardware_of

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results" / "task-detector.json"


def accuracy(detector: TaskDetector, prompts: Path) -> dict[str, Any]:
    samples = corpus(prompts)
    threshold, floor = float(detector.meta["threshold"]), float(detector.meta["floor"])
    out: dict[str, Any] = {}
    for name, splits in (("held_out", ("test",)), ("held_out_templates", ("test-template",)),
                         ("vicuna_held_out", ("test",))):
        chosen = [s for s in samples if s.split in splits and (name != "vicuna_held_out" or s.source.startswith("vicuna"))]
        judged = judge_all(detector.detect_messages, chosen)
        out[name] = {**evaluate(judged, threshold, floor), "confusions": confusions(judged)}
    return out


def run(prompts: Path) -> dict[str, Any]:
    detector = TaskDetector.builtin()
    return {"command": "python -m loadtests.benchmarks.router.detector", "model": dict(detector.meta), "splits": SPLIT_USES,
            "hardware_class": hardware_of(cpu_flags()).hardware_class,
            "accuracy": accuracy(detector, prompts)}


def render(results: dict[str, Any]) -> str:
    """The docs section: which split did what, per task on the held-out splits, then leaks."""
    model = results["model"]
    lines = ["Splits: " + "; ".join(f"**{name}**: {use}" for name, use in results["splits"].items()) + ".", ""]
    if "validation" in model:
        v = model["validation"]
        lines += [f"Shipped threshold {model['threshold']:.2f}, floor {model['floor']:.2f}, chosen on the validation "
                  f"splits, where they give a leak rate of {v['leak_rate']:.4f}, a cost of abstention of "
                  f"{v['abstention_cost']:.4f} and a worst miss rate of {v['worst_miss_rate']:.4f}.", ""]
    lines += ["| split | task | n | precision | recall | abstained | served fast |", "|---|---|---|---|---|---|---|"]
    for split, report in results["accuracy"].items():
        for task, row in report["tasks"].items():
            if row["n"]:
                lines.append(f"| {split} | {task} | {row['n']} | {row['precision'] or 0:.3f} | {row['recall']:.3f} | "
                             f"{row['abstained']:.3f} | {row['served_fast']:.3f} |")
    lines += ["", "| split | leak rate | cost of abstention |", "|---|---|---|"]
    lines += [f"| {s} | {r['leak_rate']:.4f} | {r['abstention_cost']:.4f} |" for s, r in results["accuracy"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = run(args.prompts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
