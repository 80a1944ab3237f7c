"""The task detector: a multinomial logistic regression over a request's features
(``gateway.detect.features``), its weights shipped as package data (``task_detector.json``,
written by ``python -m gateway.detect.training.train``), and its answer with the abstention it implies."""

from __future__ import annotations

import base64
import functools
import itertools
import json
import math
import struct
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

from gateway.detect.features import Parts, message_parts, prompt_parts
from gateway.detect.packed import UNIT, Fields, pack

MODEL_FILE = "task_detector.json"
# The parts of the text whose tokens are features (gateway.detect.features.Parts).
TEXT_PARTS = ("u", "s", "t")


@dataclass(frozen=True, slots=True)
class Detection:
    """The detector's probability per task type (they sum to 1), and the most likely one."""

    probabilities: Mapping[str, float]
    task: str = field(init=False, compare=False)
    confidence: float = field(init=False, compare=False)  # the most likely task's probability, in (0, 1]

    def __post_init__(self) -> None:
        # Set once: a request's classification reads both several times.
        task = max(self.probabilities, key=self.probabilities.__getitem__)
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "confidence", self.probabilities[task])

    def plausible(self, threshold: float, floor: float) -> frozenset[str]:
        """The tasks the request may be: every task when the confidence is below ``threshold``
        (the detector abstains), else those whose probability reaches ``floor``."""
        if self.confidence < threshold:
            return frozenset(self.probabilities)
        return frozenset(t for t, p in self.probabilities.items() if p >= floor)

    def among(self, tasks: Collection[str]) -> Detection:
        """The same answer over ``tasks`` only (a config that names fewer task types),
        renormalised; unchanged when it already names only those."""
        kept = {t: p for t, p in self.probabilities.items() if t in tasks}
        if not kept or len(kept) == len(self.probabilities):
            return self
        total = sum(kept.values())
        return Detection({t: p / total for t, p in kept.items()})


class Detector(Protocol):
    """What routing needs of a task detector: the tasks it names, its shipped threshold and floor
    (``meta``), and a detection per request. The words detector (``TaskDetector``, below) and the
    blend detector (``gateway.detect.blend_model``) are both."""

    tasks: tuple[str, ...]
    meta: dict[str, Any]

    def detect_messages(self, messages: Sequence[Any]) -> Detection: ...

    def detect_prompt(self, prompt: str) -> Detection: ...


_ZEROS = itertools.repeat(0)


class TaskDetector:
    """``detect`` costs one pass over a bounded window of the prompt and one dictionary lookup per
    distinct token, pair of tokens and shape feature; immutable after construction."""

    def __init__(self, tasks: Sequence[str], vocabulary: Mapping[str, int], weights: Sequence[Sequence[float]],
                 bias: Sequence[float], meta: Mapping[str, Any] | None = None) -> None:
        """``weights``: one row per feature (in ``vocabulary``'s ids), one column per task."""
        self.tasks = tuple(tasks)
        self._vocabulary = dict(vocabulary)
        self._weights = [tuple(map(float, row)) for row in weights]
        self._bias = tuple(map(float, bias))
        packed = [pack(row) for row in self._weights]
        # The features by what a request yields for them: a shape feature by its name, a token of a
        # part of the text (``TEXT_PARTS``) by the token, a pair of adjacent tokens by the pair; looked
        # up without spelling each feature's name (most of a call's time before).
        self._shapes: dict[str, int] = {}
        self._texts: dict[str, dict[str | tuple[str, str], int]] = {part: {} for part in TEXT_PARTS}
        for name, i in self._vocabulary.items():
            part, colon, token = name.partition(":")
            if colon and part in TEXT_PARTS:
                first, space, second = token.partition(" ")
                self._texts[part][(first, second) if space else token] = packed[i]
            else:
                self._shapes[name] = packed[i]
        # The bias, plus half of every field (``gateway.detect.packed``).
        self._fields_of = Fields(len(self.tasks))
        self._start = pack(self._bias) + self._fields_of.start
        self.meta = dict(meta or {})

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> TaskDetector:
        features, tasks = document["features"], document["tasks"]
        flat = struct.unpack(f"<{len(features) * len(tasks)}e", base64.b64decode(document["weights_f16"]))
        rows = [flat[i:i + len(tasks)] for i in range(0, len(flat), len(tasks))]
        return cls(tasks, {f: i for i, f in enumerate(features)}, rows, document["bias"], document.get("meta"))

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

    def scores(self, parts: Parts) -> list[float]:
        """Per task, the bias plus the weights of the features present in ``parts`` (each once)."""
        return self._fields_of.scaled(self._fields(parts))

    def _fields(self, parts: Parts) -> tuple[int, ...]:
        """The scores as integers, each plus half a field (``_start``): unsigned, so they unpack as is."""
        total = self._start + sum(map(self._shapes.get, parts.shape, _ZEROS))
        for part, tokens in parts.words:
            if tokens:
                total += sum(map(self._texts[part].get, set(tokens), _ZEROS))
        for part, tokens in parts.paired:
            table = self._texts[part]
            pairs = set(zip(tokens, tokens[1:], strict=False))
            total += sum(map(table.get, set(tokens), _ZEROS)) + sum(map(table.get, pairs, _ZEROS))
        return self._fields_of.raw(total)

    def familiarity(self, messages: Sequence[Any]) -> float:
        """The share of the user turn's distinct words the model has a weight for (1.0 for a turn
        with no words): a request whose words the detector never learned is one it cannot read."""
        tokens = next((t for part, t in message_parts(messages).paired if part == "u"), [])
        distinct = set(tokens)
        if not distinct:
            return 1.0
        known = self._texts["u"]
        return sum(1 for t in distinct if t in known) / len(distinct)

    def _detect(self, parts: Parts) -> Detection:
        fields = self._fields(parts)
        top = max(fields)  # the softmax of differences from the top score, taken exactly, in integers
        exp = [math.exp((f - top) * UNIT) for f in fields]
        total = sum(exp)
        return Detection({task: e / total for task, e in zip(self.tasks, exp, strict=True)})


@functools.cache
def _builtin() -> TaskDetector:
    text = resources.files("gateway.detect").joinpath(MODEL_FILE).read_text()
    return TaskDetector.from_document(json.loads(text))
