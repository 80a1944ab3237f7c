"""Train the task detector and choose its abstention threshold:
``python -m gateway.detect.training.train [--prompts ../shared/prompts]``.

Fits a multinomial logistic regression (class-balanced, L2, full-batch Adam; numpy only) on the
``train`` split of ``gateway.detect.training.corpus``, keeps the ``MAX_FEATURES`` features most often seen,
then picks the default threshold and floor on the validation splits (``validation`` and
``validation-template``): the pair whose leak rate (against the FP8 verdict of
deploy/render/h100-70b.yaml) stays within ``LEAK_GOAL`` and worst per-task miss rate within
``MISS_GOAL``, keeping the most requests fast. The features, the window, the synthetic templates
and ``L2`` were chosen on the same validation splits. Writes ``gateway/detect/task_detector.json``
(package data: the gateway reads it at start, never the prompts). The held-out splits (``test``,
``test-template``) are read only by the benchmark (``make bench-router``)."""

from __future__ import annotations

import argparse
import base64
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from gateway.detect.features import message_features
from gateway.detect.model import MODEL_FILE, Detection, TaskDetector
from gateway.detect.training.corpus import PROMPTS, VALIDATION_SPLITS, Sample, corpus
from gateway.detect.training.evaluate import evaluate, judge_all, summary

TASKS = ("chat", "coding", "reasoning", "extraction", "long-context", "agent")
MAX_FEATURES = 8000
MIN_DOCUMENTS = 3
L2 = 1e-4
STEPS = 400
LEAK_GOAL = 0.01  # on the tuning split; the held-out goal is 2%
MISS_GOAL = 0.05  # any task, against a verdict that would refuse it
# Below an even chance the detector abstains whatever the tuning split says; a task holding 5% or
# more stays plausible.
MIN_THRESHOLD = 0.5
FLOORS = (0.005, 0.01, 0.02, 0.05)


class Detector(Protocol):
    def detect_messages(self, messages: Sequence[Any]) -> Detection: ...


def vocabulary(rows: list[list[str]]) -> list[str]:
    seen = Counter(name for names in rows for name in set(names))
    # Ties in count broken by name: most_common keeps them in first-seen order, which follows the
    # iteration order of a set of strings and so changed with the process's hash seed.
    kept = [name for name, n in sorted(seen.items(), key=lambda item: (-item[1], item[0])) if n >= MIN_DOCUMENTS]
    return sorted(kept[:MAX_FEATURES])


def fit(rows: list[list[str]], labels: list[int], features: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Weights (features x tasks) and bias minimising class-balanced cross-entropy + L2."""
    index = {f: i for i, f in enumerate(features)}
    ids = [sorted({index[n] for n in names if n in index}) for names in rows]
    flat = np.fromiter((i for row in ids for i in row), dtype=np.int64)
    lengths = np.array([len(r) for r in ids])
    owner = np.repeat(np.arange(len(ids)), lengths)
    # A row's score is the sum of its features' weights: one reduceat over the rows' runs of
    # ``flat`` (np.add.at's unbuffered scatter was nine tenths of a fit's time); a row with no
    # feature has no run and scores its bias alone.
    starts, empty = np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths == 0
    y = np.eye(len(TASKS))[labels]
    counts = np.bincount(labels, minlength=len(TASKS)).astype(float)
    sample_weight = (len(labels) / (len(TASKS) * np.maximum(counts, 1)))[labels] / len(labels)
    weights, bias = np.zeros((len(features), len(TASKS))), np.zeros(len(TASKS))
    moments = [np.zeros_like(weights), np.zeros_like(weights), np.zeros_like(bias), np.zeros_like(bias)]
    for step in range(1, STEPS + 1):
        scores = np.add.reduceat(weights[flat], np.minimum(starts, len(flat) - 1), axis=0) if len(flat) else \
            np.zeros((len(ids), len(TASKS)))
        scores[empty] = 0.0
        scores += bias
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) * sample_weight[:, None]
        grad_w: np.ndarray = np.stack([np.bincount(flat, g[owner, k], minlength=len(features)) for k in range(len(TASKS))],
                                      axis=1).astype(np.float64)
        grad_w += L2 * weights
        _adam(weights, grad_w, moments[0], moments[1], step)
        _adam(bias, g.sum(axis=0), moments[2], moments[3], step)
    return weights, bias


def _adam(param: np.ndarray, grad: np.ndarray, m: np.ndarray, v: np.ndarray, step: int, lr: float = 0.05) -> None:
    m *= 0.9
    m += 0.1 * grad
    v *= 0.999
    v += 0.001 * grad**2
    param -= lr * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)


def choose_threshold(detector: Detector, tune: list[Sample]) -> tuple[float, float, dict[str, Any]]:
    """The (threshold, floor) sending the fewest requests of allowed tasks to standard needlessly
    while the leak rate stays within ``LEAK_GOAL`` and no task is missed more than ``MISS_GOAL``
    of the time; on a tie the more protective one (higher threshold, lower floor)."""
    judged = judge_all(detector.detect_messages, tune)
    best: tuple[float, float, dict[str, Any]] | None = None
    for floor in FLOORS:
        for threshold in np.round(np.arange(0.99, MIN_THRESHOLD - 0.005, -0.01), 2):
            report = evaluate(judged, float(threshold), floor)
            if report["leak_rate"] > LEAK_GOAL or report["worst_miss_rate"] > MISS_GOAL:
                continue
            if best is None or report["abstention_cost"] < best[2]["abstention_cost"]:
                best = (float(threshold), floor, report)
    if best is None:
        raise SystemExit(f"no threshold meets a leak rate of {LEAK_GOAL} on the tuning split")
    return best


def document(features: list[str], weights: np.ndarray, bias: np.ndarray, meta: dict[str, Any]) -> dict[str, Any]:
    return {"tasks": list(TASKS), "features": features, "bias": [round(float(b), 4) for b in bias],
            "weights_f16": base64.b64encode(weights.astype("<f2").tobytes()).decode(), "meta": meta}


def train(samples: list[Sample]) -> tuple[TaskDetector, dict[str, Any], dict[str, Any]]:
    """The detector fitted on the ``train`` split of ``samples``, its threshold and floor chosen on
    their validation splits (the detector carries them in ``meta``), the validation report, and
    the model file's document."""
    fitted = [s for s in samples if s.split == "train"]
    rows = [message_features(s.messages) for s in fitted]
    features = vocabulary(rows)
    weights, bias = fit(rows, [TASKS.index(s.task) for s in fitted], features)
    weights = weights.astype("<f2").astype(np.float64)  # judge the model as it is stored
    vocabulary_ids = {f: i for i, f in enumerate(features)}
    detector = TaskDetector(TASKS, vocabulary_ids, weights.tolist(), bias.tolist())
    threshold, floor, report = choose_threshold(detector, [s for s in samples if s.split in VALIDATION_SPLITS])
    meta = {"threshold": threshold, "floor": floor, "trained_on": dict(Counter(s.task for s in fitted)),
            "validation": {k: report[k] for k in ("leak_rate", "abstention_cost", "worst_miss_rate")},
            "command": "python -m gateway.detect.training.train"}
    detector = TaskDetector(TASKS, vocabulary_ids, weights.tolist(), bias.tolist(), meta)
    return detector, report, document(features, weights, bias, meta)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / MODEL_FILE)
    args = parser.parse_args(argv)
    detector, report, model = train(corpus(args.prompts))
    print(summary(report))
    args.out.write_text(json.dumps(model, separators=(",", ":")) + "\n")
    features, threshold = model["features"], detector.meta["threshold"]
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB, {len(features)} features, threshold {threshold})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
