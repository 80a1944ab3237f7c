"""A request as one dense row for the blend detector (``gateway.detect.blend_model``): what its
words mean as well as which words it uses.

- the shape features of ``gateway.detect.features`` (roles, lengths, code, first word), one-hot,
  those the model has a column for;
- the user window's tokens and adjacent pairs, the system prompt's and tool results' tokens,
  hashed into ``BUCKETS[part]`` columns (present or not, each part's row scaled to unit length);
- the static vectors (``gateway.detect.vectors``) of four spans: the user window, its
  *instruction* (first and last sentence: a task is asked in few words, at the top or the bottom,
  while the mean of the whole window says what it is about), the system prompt, the tool results;
- a constant (the bias).

Reads only the bounded windows ``gateway.detect.features`` reads, so its cost does not grow with the
prompt."""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gateway.detect.features import RequestText, parts_of, request_text, window
from gateway.detect.vectors import StaticVectors

# Hashed columns per part of the text: the user turn's words and pairs need the most.
BUCKETS = {"u": 1024, "s": 256, "t": 128}
SPAN_CHARS = 200
# The spans read as static vectors: the user window, its instruction, the system prompt, the tool results.
SPANS = 4
_SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+")


def instruction(text: str) -> str:
    """The first and last sentence of a user turn's window (one when it has one): the sentences
    ``_SENTENCE`` splits the window into, stripped, the empty ones dropped. Found from the front and
    from the last ``_TAIL_CHARS`` rather than by splitting the whole window (half the time on a full
    window; the tail's first piece may start mid-sentence, so it is used only where the whole
    window is the tail, else the search falls back to the whole window)."""
    text = window(text)
    first = _first_sentence(text)
    if first is None:
        return ""
    last = _last_sentence(text, max(0, len(text) - _TAIL_CHARS)) or _last_sentence(text, 0)
    assert last is not None  # the window has a sentence, so it has a last one
    (first_at, first_text), (last_at, last_text) = first, last
    if first_at == last_at:
        return first_text[:SPAN_CHARS]
    return f"{first_text[:SPAN_CHARS]}\n{last_text[-SPAN_CHARS:]}"


# Where the last sentence is looked for first: a little more than the span it gives.
_TAIL_CHARS = 256


def _first_sentence(text: str) -> tuple[int, str] | None:
    """(where it starts, the sentence stripped) of the first sentence with text; None: none."""
    at = 0
    while True:
        found = _SENTENCE.search(text, at)  # the lookbehind sees the text before ``at``, as split's does
        sentence = text[at:len(text) if found is None else found.start()].strip()
        if sentence:
            return at, sentence
        if found is None:
            return None
        at = found.end()


def _last_sentence(text: str, start: int) -> tuple[int, str] | None:
    """The last sentence with text among those after ``start``'s first boundary (all of them when
    ``start`` is 0); None: none there."""
    pieces, at = [], start
    for found in _SENTENCE.finditer(text, start):
        pieces.append((at, text[at:found.start()]))
        at = found.end()
    pieces.append((at, text[at:]))
    for k in range(len(pieces) - 1, -1, -1):
        sentence = pieces[k][1].strip()
        if sentence:
            return (pieces[k][0], sentence) if k > 0 or start == 0 else None
    return None


def _bucket(name: str, size: int) -> int:
    return zlib.crc32(name.encode()) % size


# Words seen are remembered (their bucket per part, a pair's too) up to this many, then forgotten
# all at once: a request's ~500 words and pairs cost a dictionary lookup each instead of a CRC and
# an encode (half of a call's time before), and a flood of novel words cannot grow the memo unbounded.
MEMO_LIMIT = 200_000


class _Buckets:
    """A part's token -> its column, remembered (``MEMO_LIMIT``)."""

    __slots__ = ("at", "size", "_memo")

    def __init__(self, at: int, size: int) -> None:
        self.at, self.size = at, size
        self._memo: dict[str | tuple[str, str], int] = {}

    def columns(self, tokens: Sequence[str], pairs: bool) -> set[int]:
        memo = self._memo
        keys: list[str | tuple[str, str]] = list(tokens)
        if pairs:
            keys += zip(tokens, tokens[1:], strict=False)
        found = set(map(memo.get, keys))  # in C: most keys are remembered
        if None in found:
            found.discard(None)
            novel = [key for key in dict.fromkeys(keys) if key not in memo]
            if len(memo) + len(novel) > MEMO_LIMIT:
                memo.clear()
            at, size = self.at, self.size
            for key in novel:
                column = memo[key] = at + _bucket(key if isinstance(key, str) else f"{key[0]} {key[1]}", size)
                found.add(column)
        return found  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class RequestIds:
    """``BlendFeatures.ids``: what a request's row is made of, before any arithmetic. ``shapes``: the
    shape columns set (to 1); ``words``: per part of the text (``BUCKETS``), its hashed columns set
    (each to one over the root of their count); ``spans``: each of the ``SPANS``' subword ids (empty
    where it has none). The compiled core (``gateway.detect.native``) adds these up as they are."""

    shapes: list[int]
    words: tuple[set[int], ...]
    spans: tuple[list[int], ...]


@dataclass(frozen=True, slots=True)
class SparseRow:
    """``BlendFeatures.read``: a request's row before it is a row. ``shapes``: the shape columns
    set (to 1); ``words``: per part of the text (``BUCKETS``), its hashed columns set (each to one
    over the root of their count); the vectors' spans that have one (their indices among the
    ``SPANS``) and their unit rows. The bias column (always 1) is left to the reader."""

    shapes: list[int]
    words: tuple[set[int], ...]
    spans: tuple[int, ...]
    units: np.ndarray

    def vectors(self, dim: int) -> np.ndarray:
        """The row's vectors slice: the spans' unit rows, zeros where a span has none."""
        out = np.zeros((SPANS, dim), dtype=np.float32)
        if self.spans:
            out[list(self.spans)] = self.units
        return out.ravel()


class BlendFeatures:
    """``of(messages)``: a request's dense row; ``VECTOR_SLICE`` of it is its static vectors."""

    def __init__(self, vectors: StaticVectors, shapes: Sequence[str]) -> None:
        self._vectors = vectors
        self._shapes = {name: i for i, name in enumerate(shapes)}
        self._buckets = {}
        at = len(shapes)
        for part, size in BUCKETS.items():
            self._buckets[part], at = _Buckets(at, size), at + size
        self._vectors_at = at
        self.width = self._vectors_at + SPANS * vectors.dim + 1  # the last column: a constant (the bias)
        self.vector_slice = slice(self._vectors_at, self._vectors_at + SPANS * vectors.dim)

    @property
    def shapes(self) -> dict[str, int]:
        """The shape features' columns by name (a copy)."""
        return dict(self._shapes)

    @property
    def parts(self) -> list[tuple[int, int]]:
        """Each hashed part's (first column, size), in ``BUCKETS``' order."""
        return [(buckets.at, buckets.size) for buckets in self._buckets.values()]

    def shape_columns(self, names: Sequence[str]) -> list[int]:
        """The columns of those shape features the model has."""
        shapes = self._shapes
        return [shapes[name] for name in names if name in shapes]

    def read(self, messages: list[dict[str, Any]]) -> SparseRow:
        """A request's row as its non-zero columns before the vectors, and its vectors' spans
        (what the served detector adds up: 20-60 columns of 2,300, not the whole row)."""
        found = self.ids(messages)
        vectors = self._vectors
        return SparseRow(found.shapes, found.words, *vectors.units(list(found.spans)))

    def ids(self, messages: list[dict[str, Any]]) -> RequestIds:
        """The request's columns and its spans' subword ids (``RequestIds``)."""
        return self.ids_of(request_text(messages))

    def ids_of(self, read: RequestText) -> RequestIds:
        """``ids`` of a request already read."""
        parts = parts_of(read)
        shapes = self.shape_columns(parts.shape)
        found: dict[str, set[int]] = {part: set() for part in BUCKETS}
        for part, tokens in parts.words:
            found[part] |= self._buckets[part].columns(tokens, pairs=False)
        for part, tokens in parts.paired:
            found[part] |= self._buckets[part].columns(tokens, pairs=True)
        vectors = self._vectors
        spans = (window(read.user), instruction(read.user), read.system[:256], " ".join(read.tool_results))
        return RequestIds(shapes, tuple(found.values()), tuple(vectors.ids(span) for span in spans))

    def of(self, messages: list[dict[str, Any]]) -> np.ndarray:
        """The request's dense row (what training stacks)."""
        sparse = self.read(messages)
        row = np.zeros(self.width, dtype=np.float32)
        row[sparse.shapes] = 1.0
        for columns in sparse.words:
            if columns:
                row[sorted(columns)] = 1.0 / math.sqrt(len(columns))
        row[self.vector_slice] = sparse.vectors(self._vectors.dim)
        row[-1] = 1.0
        return row
