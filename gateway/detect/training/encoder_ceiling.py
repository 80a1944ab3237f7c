"""How much of the detector's miss on unfamiliar sources is its representation (issue 34): the
same fit, abstention and leave-one-source-out judging as the blend detector
(``gateway.detect.training.blend``), with a real sentence encoder's outputs as the features
instead of static vectors and hashed words.

The encoder is the blend detector's own teacher, all-MiniLM-L6-v2 (``gateway.detect.training.encoder``,
run with numpy), read over two spans of each request: the system prompt's head with the user
window, and the instruction (``gateway.detect.blend_features.instruction``), each cut to
``MAX_TOKENS``. It costs tens of milliseconds a request on one core (the detector has one), so
this is a measurement of what a better representation would buy, not a serving recipe.

Three recipes on one subset: ``encoder`` (the two spans' vectors and a constant), ``blend`` (the
shipped detector's row) and ``encoder+blend`` (both). The subset: at most ``CAP`` requests per
(task, source), drawn by a seeded shuffle (the encoder's minutes are what this spends), templates
included as in the blend detector's training; every recipe is scored on the same requests.
Encodings are kept in ``CACHE`` (keyed by request id and text), so a rerun costs the fits only."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gateway.detect.blend_features import BlendFeatures, instruction
from gateway.detect.features import request_text, window
from gateway.detect.training.blend import groups, leave_one_out, shape_names
from gateway.detect.training.corpus import corpus, public_samples
from gateway.detect.training.data.sources import load_all
from gateway.detect.training.distill import teacher_folder
from gateway.detect.training.encoder import SentenceEncoder
from gateway.detect.training.train_blend import family
from gateway.detect.vectors import StaticVectors

CAP = 300
SEED = 7
MAX_TOKENS = 96
BATCH = 32
CACHE = Path.home() / ".cache" / "duet" / "detector" / "encoder-rows.npz"
RECIPES = ("encoder", "blend", "encoder+blend")


@dataclass(frozen=True)
class Request:
    id: str
    task: str
    source: str
    messages: list[dict[str, Any]]


def subset(prompts: Path, cap: int = CAP, seed: int = SEED) -> list[Request]:
    """At most ``cap`` requests per (task, source): templates, the public sets, the fetched sources."""
    templates = [Request(s.id, s.task, "synth", s.messages) for s in corpus(prompts) if family(s.source) == "synth"]
    judged = [Request(s.id, s.task, family(s.source), s.messages) for s in public_samples(prompts)]
    judged += [Request(i.id, i.task, family(i.source), i.messages) for i in load_all()]
    by_group: dict[tuple[str, str], list[Request]] = {}
    for request in [*templates, *judged]:
        by_group.setdefault((request.task, request.source), []).append(request)
    rng, out = random.Random(seed), []
    for key in sorted(by_group):
        members = by_group[key]
        rng.shuffle(members)
        out += members[:cap]
    return out


def spans(messages: list[dict[str, Any]]) -> tuple[str, str]:
    """The system prompt's head with the user window, and the instruction."""
    read = request_text(messages)
    system = read.system[:256]
    whole = (system + "\n" if system else "") + window(read.user)
    return whole, instruction(read.user) or system or " "


def _digest(requests: Sequence[Request]) -> str:
    h = hashlib.sha256()
    for request in requests:
        for text in spans(request.messages):
            h.update(request.id.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def encode(encoder: SentenceEncoder, texts: Sequence[str], log: Callable[[str], None] = print) -> np.ndarray:
    """Unit vectors, batched by length (so a batch pads little)."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for start in range(0, len(texts), BATCH):
        at = order[start:start + BATCH]
        out[at] = encoder.encode([texts[i] for i in at], batch=BATCH)
        if start % (BATCH * 32) == 0:
            log(f"encoded {start} of {len(texts)}")
    return out


def encodings(requests: Sequence[Request], cache: Path = CACHE, log: Callable[[str], None] = print) -> np.ndarray:
    """Per request, its two spans' encoder vectors side by side (768 floats), from ``cache`` when it
    holds exactly these requests' texts."""
    digest = _digest(requests)
    if cache.exists():
        stored = np.load(cache)
        if str(stored["digest"]) == digest:
            out: np.ndarray = stored["rows"]
            return out
    encoder = SentenceEncoder(teacher_folder(), max_tokens=MAX_TOKENS)
    pairs = [spans(r.messages) for r in requests]
    rows = np.hstack([encode(encoder, [p[k] for p in pairs], log) for k in (0, 1)])
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, digest=np.array(digest), rows=rows)
    return rows


def rows_of(recipe: str, requests: Sequence[Request], encoded: np.ndarray,
            vectors: StaticVectors) -> tuple[np.ndarray, slice]:
    """A recipe's rows and the slice its familiarity reads (the encoder's vectors, or the blend's)."""
    constant = np.ones((len(requests), 1), dtype=np.float32)
    if recipe == "encoder":
        return np.hstack([encoded, constant]), slice(0, encoded.shape[1])
    features = BlendFeatures(vectors, shape_names([r.messages for r in requests]))
    blend = np.stack([features.of(r.messages) for r in requests])
    if recipe == "blend":
        return blend, features.vector_slice
    if recipe == "encoder+blend":
        return np.hstack([encoded, blend]), slice(0, encoded.shape[1])
    raise ValueError(f"unknown recipe {recipe!r}: one of {', '.join(RECIPES)}")


def judge(recipe: str, requests: Sequence[Request], encoded: np.ndarray, vectors: StaticVectors,
          log: Callable[[str], None] = print) -> dict[str, dict[str, Any]]:
    """Leave-one-source-out over the subset's sources (the templates are trained on, never judged)."""
    rows, vector_slice = rows_of(recipe, requests, encoded, vectors)
    tasks, sources = [r.task for r in requests], [r.source for r in requests]
    training = groups(rows, tasks, sources, vector_slice)
    names = sorted({s for s in sources if s != "synth"})
    judged = {name: rows[[k for k, s in enumerate(sources) if s == name]] for name in names}
    labels = {name: [t for t, s in zip(tasks, sources, strict=True) if s == name] for name in names}
    return leave_one_out(judged, labels, training, vector_slice, log=log)
