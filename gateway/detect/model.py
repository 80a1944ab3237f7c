"""The task detector: a multinomial logistic regression over a request's features
(``gateway.detect.features``), its weights shipped as package data (``task_detector.json``,
written by ``python -m gateway.detect.train``), and its answer with the abstention it implies."""

from __future__ import annotations

import base64
import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from gateway.detect.features import Parts, message_parts, prompt_parts

MODEL_FILE = "task_detector.json"
# The parts of the text whose tokens are features (gateway.detect.features.Parts).
TEXT_PARTS = ("u", "s", "t")


@dataclass(frozen=True, slots=True)
class Detection:
    """The detector's probability per task type (they sum to 1)."""

    probabilities: Mapping[str, float]

    @property
    def task(self) -> str:
        return max(self.probabilities, key=self.probabilities.__getitem__)

    @property
    def confidence(self) -> float:
        """The most likely task's probability, in (0, 1]."""
        return self.probabilities[self.task]

    def plausible(self, threshold: float, floor: float) -> frozenset[str]:
        """The tasks the request may be: every task when the confidence is below ``threshold``
        (the detector abstains), else those whose probability reaches ``floor``."""
        if self.confidence < threshold:
            return frozenset(self.probabilities)
        return frozenset(t for t, p in self.probabilities.items() if p >= floor)

    def among(self, tasks: Sequence[str] | frozenset[str]) -> Detection:
        """The same answer over ``tasks`` only (a config that names fewer task types),
        renormalised; unchanged when it already names only those."""
        kept = {t: p for t, p in self.probabilities.items() if t in tasks}
        if len(kept) == len(self.probabilities) or not kept:
            return self
        total = sum(kept.values())
        return Detection({t: p / total for t, p in kept.items()})


class TaskDetector:
    """``detect`` costs one pass over a bounded window of the prompt and one row sum per present
    feature; immutable after construction."""

    def __init__(self, tasks: Sequence[str], vocabulary: Mapping[str, int], weights: np.ndarray, bias: np.ndarray,
                 meta: Mapping[str, Any] | None = None) -> None:
        self.tasks = tuple(tasks)
        self._vocabulary = dict(vocabulary)
        # The token features by part, keyed by the token (and by the pair of tokens): looked up
        # without spelling each feature's name (most of a call's time before).
        self._words: dict[str, dict[str, int]] = {}
        self._pairs: dict[str, dict[tuple[str, str], int]] = {}
        for name, i in self._vocabulary.items():
            part, colon, token = name.partition(":")
            if colon and part in TEXT_PARTS:
                first, space, second = token.partition(" ")
                if space:
                    self._pairs.setdefault(part, {})[(first, second)] = i
                else:
                    self._words.setdefault(part, {})[token] = i
        self._weights = weights.astype(np.float64)
        self._bias = bias.astype(np.float64)
        self.meta = dict(meta or {})

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> TaskDetector:
        features, tasks = document["features"], document["tasks"]
        weights = np.frombuffer(base64.b64decode(document["weights_f16"]), dtype="<f2").reshape(len(features), len(tasks))
        return cls(tasks, {f: i for i, f in enumerate(features)}, weights, np.asarray(document["bias"]), document.get("meta"))

    @classmethod
    def builtin(cls) -> TaskDetector:
        """The model shipped inside the package: one instance per process, shared by every config
        that loads it (it is immutable; parsing its 200 KB file per config load cost every reload
        and replay that much, and two loads of one config would not compare equal)."""
        return _builtin()

    def detect_messages(self, messages: Sequence[Any]) -> Detection:
        return self._detect(message_parts(messages))

    def detect_prompt(self, prompt: str) -> Detection:
        return self._detect(prompt_parts(prompt))

    def feature_ids(self, parts: Parts) -> list[int]:
        """The vocabulary's ids of the features in ``parts``, each once (present or not): those of
        ``feature_ids(parts.names(), vocabulary)``."""
        get = self._vocabulary.get
        found = set(map(get, parts.shape))
        empty: dict[Any, int] = {}
        for part, tokens in (*parts.words, *parts.paired):
            found.update(map(self._words.get(part, empty).get, tokens))
        for part, tokens in parts.paired:
            found.update(map(self._pairs.get(part, empty).get, zip(tokens, tokens[1:], strict=False)))
        found.discard(None)
        return list(found)  # type: ignore[arg-type]

    def _detect(self, parts: Parts) -> Detection:
        ids = self.feature_ids(parts)
        # take + add.reduce, and the softmax of six numbers in Python: numpy's per-call overhead,
        # not the arithmetic, was half of a short prompt's time here.
        scores = (np.add.reduce(self._weights.take(ids, axis=0)) + self._bias if ids else self._bias).tolist()
        top = max(scores)
        exp = [math.exp(score - top) for score in scores]
        total = sum(exp)
        return Detection({task: e / total for task, e in zip(self.tasks, exp, strict=True)})


@functools.cache
def _builtin() -> TaskDetector:
    text = resources.files("gateway.detect").joinpath(MODEL_FILE).read_text()
    return TaskDetector.from_document(json.loads(text))
