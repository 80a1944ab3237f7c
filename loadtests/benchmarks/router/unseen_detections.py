"""The shipped detector's answers on prompts of sources it never trained on, for replays whose
requests name no task (``gateway.fleet.world.detections``); writes
gateway/fleet/world/data/unseen_detections.json:

    .venv/bin/python -m loadtests.benchmarks.router.unseen_detections   (make detector-vectors detector-data first)

The recipe is the shipped blend detector's (``gateway.detect.training.train_blend``): its ridge
penalty and temperature chosen nested on every source's out-of-fold answers, as for the model
that ships. Then, for each public source, a model fitted on every group but that source's answers
it, at the shipped model's familiarity cut (an unfamiliar prompt's answer is uniform, as the
served detector's is). Up to ``PER_SOURCE`` prompts per (task, source), drawn at random, keep the
file small; probabilities rounded to 4 places."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from gateway.detect.training import PROMPTS
from gateway.detect.training.blend import TASKS, Abstention, choose_nested, fit
from gateway.detect.training.train_blend import blend_corpus
from gateway.fleet.world.detections import DETECTIONS_FILE

PER_SOURCE = 150


def unseen(prompts: Path, seed: int = 0) -> dict[str, Any]:
    data = blend_corpus(prompts)
    vectors = data.features.vector_slice
    chosen = choose_nested(data.judged, data.labels, data.training, vectors)
    rule = Abstention(1.0, 0.0, chosen.rule.familiarity)  # only the familiarity cut: the policy sets the rest
    rng = np.random.default_rng(seed)
    detections: dict[str, dict[str, list[list[float]]]] = {}
    for source in sorted(data.judged):
        (model,) = fit([g for g in data.training if g.source != source], vectors, (chosen.ridge,))
        model = replace(model, temperature=chosen.fitted.temperature)
        found = rule.detections(model, data.judged[source])
        labels = data.labels[source]
        for task in sorted(set(labels)):
            picked = [k for k, label in enumerate(labels) if label == task]
            if len(picked) > PER_SOURCE:
                picked = sorted(rng.choice(picked, PER_SOURCE, replace=False).tolist())
            detections.setdefault(task, {})[source] = [[round(found[k].probabilities[t], 4) for t in TASKS]
                                                       for k in picked]
        print(f"{source}: {len(labels)} prompts answered without it", flush=True)
    return {"command": "python -m loadtests.benchmarks.router.unseen_detections",
            "what": "per task, per public source, the shipped blend recipe's answers (probabilities over tasks) on "
                    "prompts of that source by a model fitted without it; read by gateway.fleet.world.detections",
            "tasks": list(TASKS), "ridge": chosen.ridge, "temperature": chosen.fitted.temperature,
            "familiarity_cut": round(chosen.rule.familiarity, 6), "per_source": PER_SOURCE, "detections": detections}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument("--out", type=Path, default=DETECTIONS_FILE)
    args = parser.parse_args(argv)
    document = unseen(args.prompts)
    args.out.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
