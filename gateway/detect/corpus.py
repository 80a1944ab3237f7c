"""The labelled requests the detector is trained, tuned and measured on.

Public prompts from ``../shared/prompts`` (GSM8K: reasoning; HumanEval: coding; Vicuna bench:
chat, except its coding and math questions), and synthesised requests (``gateway.detect.synth``).
Splits are deterministic: a sample's split is the hash of its id (``train`` 60%, ``tune`` 15%,
``test`` 25%), and two synthesised templates per task never reach training: one's samples form
``test-template`` (measured only), the other's ``tune-template`` (tuned on only), so the threshold
is chosen, and the held-out numbers measured, on templates the detector has never seen."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.detect.synth import TEMPLATES

PROMPTS = Path(__file__).resolve().parents[3] / "shared" / "prompts"
SPLITS = ("train", "tune", "tune-template", "test", "test-template")
# Samples per synthesised template (fewer long documents: each is up to ~100k characters).
PER_TEMPLATE = {"long-context": 80}
DEFAULT_PER_TEMPLATE = 150
# GSM8K has 8.8k problems: at most this many reach training, so reasoning does not drown the rest.
REASONING_TRAIN_CAP = 1500
VICUNA_TASKS = {"coding": "coding", "math": "reasoning"}


@dataclass(frozen=True, slots=True)
class Sample:
    id: str
    task: str
    source: str  # the public set's name, or synth:<template>
    messages: list[dict[str, Any]]
    split: str


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def split_of(sample_id: str) -> str:
    u = _unit(sample_id)
    return "train" if u < 0.60 else "tune" if u < 0.75 else "test"


def held_out_templates() -> dict[str, tuple[str, str]]:
    """Per task, two synthesised templates kept out of training: the first only measured
    (``test-template``), the second only tuned on (``tune-template``), so the threshold is
    chosen on templates the model has not seen either."""
    out = {}
    for task, templates in TEMPLATES.items():
        names = sorted((t.__name__ for t in templates), key=lambda name: _unit("template:" + name))
        out[task] = (names[0], names[1])
    return out


def public_samples(root: Path = PROMPTS) -> Iterator[Sample]:
    def user(text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": text}]

    for name in ("gsm8k_train", "gsm8k_test"):
        for i, line in enumerate((root / f"{name}.jsonl").read_text().splitlines()):
            sid = f"{name}/{i}"
            yield Sample(sid, "reasoning", "gsm8k", user(json.loads(line)["question"]), split_of(sid))
    for line in (root / "humaneval.jsonl").read_text().splitlines():
        row = json.loads(line)
        yield Sample(row["task_id"], "coding", "humaneval", user(row["prompt"]), split_of(row["task_id"]))
    for line in (root / "vicuna_bench_questions.jsonl").read_text().splitlines():
        row = json.loads(line)
        sid = f"vicuna/{row['question_id']}"
        yield Sample(sid, VICUNA_TASKS.get(row["category"], "chat"), f"vicuna:{row['category']}", user(row["turns"][0]),
                     split_of(sid))


def synthetic_samples() -> Iterator[Sample]:
    held_out = held_out_templates()
    for task, templates in TEMPLATES.items():
        for template in templates:
            name = template.__name__
            for seed in range(PER_TEMPLATE.get(task, DEFAULT_PER_TEMPLATE)):
                sid = f"synth/{name}/{seed}"
                test, tune = held_out[task]
                split = "test-template" if name == test else "tune-template" if name == tune else split_of(sid)
                yield Sample(sid, task, f"synth:{name}", template(random.Random(sid)), split)


def corpus(root: Path = PROMPTS) -> list[Sample]:
    """Every sample, GSM8K's training share capped at ``REASONING_TRAIN_CAP`` (by hash order)."""
    samples = [*public_samples(root), *synthetic_samples()]
    gsm_train = sorted((s for s in samples if s.source == "gsm8k" and s.split == "train"), key=lambda s: _unit(s.id))
    dropped = {s.id for s in gsm_train[REASONING_TRAIN_CAP:]}
    return [s for s in samples if s.id not in dropped]
