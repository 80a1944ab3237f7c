"""Train the blend detector the gateway ships (``gateway/detect/task_detector_blend.json``):

    .venv/bin/python -m gateway.detect.training.train_blend   (make detector-vectors detector-data first)

Fitted on everything it has: the templates, the three public sets in ``../shared/prompts`` and every
source ``make detector-data`` fetches, each source weighted alike. Its ridge penalty and its
abstention (threshold, floor, familiarity cut) are chosen exactly as leave-one-source-out chooses
them for each held-out source (``gateway.detect.training.blend.choose_nested``), here on all the
judged sources' out-of-fold answers: so the leave-one-source-out table
(``loadtests.benchmarks.router.detector_by_source --recipe blend``) is this recipe's estimate on a
source nobody trained it on, and nothing here is tuned on the answers it is scored by."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gateway.detect.blend_features import BlendFeatures
from gateway.detect.blend_model import MODEL_FILE, BlendDetector, encode_array
from gateway.detect.training.blend import TASKS, Group, choose_nested, groups, shape_names
from gateway.detect.training.corpus import PROMPTS, Sample, corpus, public_samples
from gateway.detect.training.data.sources import SOURCES, load_all
from gateway.detect.training.distill import TEACHER
from gateway.detect.vectors import VECTORS, StaticVectors

OUT = Path(__file__).resolve().parents[1] / MODEL_FILE
# The public sets' sources are named "<set>:<part>"; a source is judged whole.
SHARED = ("gsm8k", "humaneval", "vicuna")


def family(source: str) -> str:
    return source.split(":")[0]


@dataclass(frozen=True)
class BlendCorpus:
    """Every request's row, task and source; the judged sources' rows and labels apart."""

    features: BlendFeatures
    shapes: list[str]
    training: list[Group]
    judged: dict[str, np.ndarray]
    labels: dict[str, list[str]]


def blend_corpus(prompts: Path, vectors: StaticVectors | None = None, added: Sequence[Sample] = ()) -> BlendCorpus:
    """``vectors``: the table ``make detector-vectors`` wrote, when None; ``added``: a team's own
    labelled requests (``duet detect train``), one more source judged and fitted like the others."""
    vectors = vectors or StaticVectors.load()
    templates = [s for s in corpus(prompts) if family(s.source) == "synth"]
    judged_items: list[Any] = [*public_samples(prompts), *load_all(), *added]
    requests = [s.messages for s in templates] + [i.messages for i in judged_items]
    shapes = shape_names(requests)
    features = BlendFeatures(vectors, shapes)
    rows = np.stack([features.of(m) for m in requests])
    tasks = [s.task for s in templates] + [i.task for i in judged_items]
    sources = ["synth"] * len(templates) + [family(i.source) for i in judged_items]
    print(f"blend: {len(rows)} requests x {features.width} features", flush=True)
    training = groups(rows, tasks, sources, features.vector_slice)
    names = (*SHARED, *SOURCES, *sorted({family(s.source) for s in added}))
    judged = {name: rows[[k for k, s in enumerate(sources) if s == name]] for name in names}
    labels = {name: [t for t, s in zip(tasks, sources, strict=True) if s == name] for name in judged}
    return BlendCorpus(features, shapes, training, judged, labels)


def document(data: BlendCorpus, vectors_path: Path) -> dict[str, Any]:
    chosen = choose_nested(data.judged, data.labels, data.training, data.features.vector_slice)
    weights, centroids = encode_array(chosen.fitted.weights), encode_array(chosen.fitted.centroids)
    return {"tasks": list(TASKS), "shapes": data.shapes, "temperature": chosen.fitted.temperature,
            "weights_f32": weights["f32"], "weights_shape": weights["shape"],
            "centroids_f32": centroids["f32"], "centroids_shape": centroids["shape"],
            "meta": {"threshold": chosen.rule.threshold, "floor": chosen.rule.floor,
                     "familiarity": round(chosen.rule.familiarity, 6), "chosen": chosen.report,
                     "trained_on": sorted({g.source for g in data.training}),
                     "vectors": {"teacher": f"{TEACHER.name} {TEACHER.version}", "made_by": "make detector-vectors",
                                 "file": vectors_path.name}}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument("--vectors", type=Path, default=VECTORS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    vectors = StaticVectors.load(args.vectors)
    written = document(blend_corpus(args.prompts, vectors), args.vectors)
    BlendDetector.from_document(written, vectors)  # reads back before it is written
    args.out.write_text(json.dumps(written, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    meta = written["meta"]
    print(f"wrote {args.out}: threshold {meta['threshold']} floor {meta['floor']} familiarity {meta['familiarity']} "
          f"(out of fold: {meta['chosen']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
