"""The task detector's benchmark: held-out accuracy, leaks and the cost of abstention, and its
latency by prompt size; writes docs/results/task-detector.json.

    .venv/bin/python -m loadtests.benchmarks.router.detector [--prompts ../shared/prompts]

Accuracy is measured on the held-out splits only (``test``: unseen prompts of seen templates and
public sets; ``test-template``: templates never trained or tuned on; ``gateway.detect.corpus``
says which split trained and which tuned what, and the results repeat it), at the shipped threshold and
floor, against the FP8 verdict of deploy/render/h100-70b.yaml (fast allowed chat, coding, agent,
extraction). Latency: ``detect_messages`` on one user turn of about 256, 1k, 8k and 32k tokens
(4 characters a token), 2,000 calls each after 200 warm-up calls, with the garbage collector off
while timed; wall time (perf_counter) and the thread's CPU time per call, so a call descheduled on
a busy machine shows as wall time above its CPU time."""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
from pathlib import Path
from typing import Any

from gateway.detect.corpus import PROMPTS, SPLIT_USES, corpus
from gateway.detect.evaluate import confusions, evaluate, judge_all
from gateway.flow import TaskDetector
from serving.hardware import cpu_flags, hardware_of

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results" / "task-detector.json"
SIZES = (256, 1024, 8192, 32768)
CALLS, WARMUP = 2000, 200


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


def latency(detector: TaskDetector) -> dict[str, dict[str, float]]:
    rng = random.Random(0)
    words = ("the", "report", "budget", "clips", "function", "return", "2025", "how", "many", "json", "{", "}")
    out = {}
    for tokens in SIZES:
        text = " ".join(rng.choice(words) for _ in range(tokens))  # ~4 characters a token with the space
        messages = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": text}]
        for _ in range(WARMUP):
            detector.detect_messages(messages)
        wall, cpu = [], []
        gc.collect()
        gc.disable()  # a collection pausing one call is the process's, not the detector's
        try:
            for _ in range(CALLS):
                cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
                detector.detect_messages(messages)
                wall.append(time.perf_counter_ns() - start)
                cpu.append(time.thread_time_ns() - cpu_start)
        finally:
            gc.enable()
        out[str(tokens)] = {"chars": len(text), **_quantiles(wall, ""), **_quantiles(cpu, "cpu_")}
    return out


def _quantiles(samples: list[int], prefix: str) -> dict[str, float]:
    ordered = sorted(samples)
    return {f"{prefix}p50_us": ordered[len(ordered) // 2] / 1e3, f"{prefix}p99_us": ordered[int(len(ordered) * 0.99)] / 1e3}


def run(prompts: Path) -> dict[str, Any]:
    detector = TaskDetector.builtin()
    return {"command": "python -m loadtests.benchmarks.router.detector", "model": dict(detector.meta), "splits": SPLIT_USES,
            "hardware_class": hardware_of(cpu_flags()).hardware_class,
            "accuracy": accuracy(detector, prompts), "latency_by_prompt_tokens": latency(detector)}


def render(results: dict[str, Any]) -> str:
    """The docs section: which split did what, per task on the held-out splits, then leaks, then
    latency."""
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
    lines += ["", f"Latency per call on {results['hardware_class']} (wall; CPU time of the calling thread):", "",
              "| prompt tokens | p50 µs | p99 µs | CPU p50 µs | CPU p99 µs |", "|---|---|---|---|---|"]
    lines += [f"| {t} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | {r['cpu_p50_us']:.0f} | {r['cpu_p99_us']:.0f} |"
              for t, r in results["latency_by_prompt_tokens"].items()]
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
