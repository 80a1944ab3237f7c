"""The blend detector compiled (``blend_core.c``): built once per machine by ``duet detect
native`` (``make detector-native``) into ``~/.cache/duet/native``, loaded with ctypes.

Why: in a busy gateway the detector's Python and numpy steps meet cold caches between requests,
and their per-step machinery, not the arithmetic, was most of what detection cost a request
(docs/routing.md, "What it costs the gateway"). ``BlendCore.detect`` reads a request's text and
answers in one call where it reads every character of the text (all below U+20000 but two);
``BlendCore.scores`` does the arithmetic of a request Python read (any other text). The Python
and numpy paths stay: training uses them, a machine without a C compiler serves with them, and
they are the reference the compiled one is tested against (the same columns and ids, the same
answers to 1e-6; ``tests/gateway/detect/test_native.py``).

The library is named by a hash of its source and flags, so an edited source is never served by a
stale build: it is simply not found until it is built again."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import os
import platform
import shutil
import subprocess
import tempfile
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from gateway.errors import DuetError

SOURCE = "blend_core.c"
# -O3 vectorises the sums (SSE2, every x86-64 has it); no -march=native: ~/.cache may be shared
# between machines of different CPU classes.
FLAGS = ("-O3", "-shared", "-fPIC")
NATIVE_DIR = Path.home() / ".cache" / "duet" / "native"
SYMBOL = "duet_blend_scores"
# What the compiled build does (benchmarks record it beside their figures: before 2026-12-07's
# twelfth session it did the arithmetic alone).
COMPILED = "reading and arithmetic"
# The reading and the arithmetic at once (``BlendCore.detect``).
READ_SYMBOL = "duet_blend_detect"
# The reading alone, written out (``BlendCore.read``: what the tests compare with Python's).
READING_SYMBOL = "duet_blend_read"
# What duet_blend_read may write (the most columns and ids), and the most bytes of a character's
# normalised text the reading takes (blend_core.c's MAX_COLUMNS, MAX_IDS, MAX_NORMALISED).
SIZES = "duet_blend_sizes"
# duet_blend_detect's answers: read (0); a text with a character it does not read (-2) or longer than
# it reads (-3), for Python to read. Anything else (-1) is a table that does not fit the call.
_READ_IN_PYTHON = (-2, -3)


class NativeUnavailable(DuetError):
    """The compiled core cannot be built or loaded here."""


def source_text() -> str:
    return resources.files("gateway.detect").joinpath(SOURCE).read_text(encoding="utf-8")


def library_path(directory: Path = NATIVE_DIR) -> Path:
    """Where this source's build lives: named by its hash, the flags and the machine's architecture."""
    digest = hashlib.sha256((source_text() + " ".join(FLAGS)).encode()).hexdigest()[:16]
    return directory / f"blend_core-{digest}-{platform.machine()}.so"


def compiler() -> str | None:
    """$CC, else ``cc`` or ``gcc`` on PATH."""
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def build(directory: Path = NATIVE_DIR, cc: str | None = None) -> Path:
    """Compiles the core into ``library_path(directory)`` (atomically: a gateway loading it never sees
    half a file) and returns the path; an existing build is kept."""
    out = library_path(directory)
    if out.exists():
        return out
    cc = cc or compiler()
    if cc is None:
        raise NativeUnavailable("no C compiler: set $CC or install one (Debian: apt-get install gcc); "
                                "the detector serves with numpy meanwhile")
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        source, built = Path(tmp) / SOURCE, Path(tmp) / out.name
        source.write_text(source_text(), encoding="utf-8")
        try:
            done = subprocess.run([cc, *FLAGS, "-o", str(built), str(source), "-lm"], capture_output=True, text=True,
                                  timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise NativeUnavailable(f"{cc} could not compile {SOURCE}: {exc}") from exc
        if done.returncode != 0:
            raise NativeUnavailable(f"{cc} failed on {SOURCE} (exit {done.returncode}): {done.stderr.strip()[-600:]}")
        os.replace(built, out)
    return out


@functools.cache
def load(directory: Path = NATIVE_DIR) -> ctypes.CDLL | None:
    """This source's build, loaded once per process; None when it has not been built here (or does
    not load)."""
    path = library_path(directory)
    if not path.exists():
        return None
    try:
        library = ctypes.CDLL(str(path))
    except OSError:
        return None
    function, detect = getattr(library, SYMBOL, None), getattr(library, READ_SYMBOL, None)
    reading = getattr(library, READING_SYMBOL, None)
    if function is None or detect is None or reading is None or getattr(library, SIZES, None) is None:
        return None
    reading.restype = ctypes.c_int
    reading.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int64,
                        ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]  # columns, counts, ids, id counts
    detect.restype = ctypes.c_int
    detect.argtypes = [ctypes.c_void_p,  # the model (_Model)
                       ctypes.c_char_p, ctypes.c_int, ctypes.c_int64,  # user window, its bytes, the turn's characters
                       ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,  # system head, tool results
                       ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]  # shape columns, their count, out
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,  # weights, width, tasks
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,  # columns, counts, parts
                         ctypes.c_void_p, ctypes.c_int, ctypes.c_int,  # rows, n_rows, dim
                         ctypes.c_void_p, ctypes.c_int, ctypes.c_int,  # blocks, k, spans
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]  # ids, lengths, out
    return library


class _Table(ctypes.Structure):
    """blend_core.c's ``struct duet_table``: strings to values, open addressing on crc32."""

    _fields_ = [("blob", ctypes.c_void_p), ("offsets", ctypes.c_void_p), ("values", ctypes.c_void_p),
                ("slots", ctypes.c_void_p), ("n_keys", ctypes.c_int32), ("n_slots", ctypes.c_int32),
                ("longest", ctypes.c_int32)]


class _Characters(ctypes.Structure):
    """blend_core.c's ``struct duet_chars``: how Python and BERT read each character below ``n``."""

    _fields_ = [("flags", ctypes.c_void_p), ("lower", ctypes.c_void_p), ("normalised_at", ctypes.c_void_p),
                ("normalised", ctypes.c_void_p), ("n", ctypes.c_int32)]


class _Model(ctypes.Structure):
    """blend_core.c's ``struct duet_blend_model``."""

    _fields_ = [("weights", ctypes.c_void_p), ("width", ctypes.c_int32), ("tasks", ctypes.c_int32),
                ("rows", ctypes.c_void_p), ("n_rows", ctypes.c_int32), ("dim", ctypes.c_int32),
                ("blocks", ctypes.c_void_p), ("k", ctypes.c_int32), ("spans", ctypes.c_int32),
                ("temperature", ctypes.c_double), ("familiarity_cut", ctypes.c_double),
                ("crc", ctypes.c_void_p), ("shapes", _Table), ("programming", _Table), ("vocabulary", _Table),
                ("chars", _Characters), ("unknown", ctypes.c_int32),
                ("parts_at", ctypes.c_int32 * 3), ("parts_size", ctypes.c_int32 * 3)]


def _crc_table() -> np.ndarray:
    """zlib's crc32 a byte at a time (reflected, polynomial 0xEDB88320)."""
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xEDB88320 if crc & 1 else crc >> 1
        table.append(crc)
    return np.array(table, dtype=np.uint32)


class _StringTable:
    """A ``_Table`` and the arrays it points at (held here, so they outlive every call)."""

    def __init__(self, entries: Mapping[str, int]) -> None:
        keys = [key.encode() for key in entries]
        self._blob = np.frombuffer(b"".join(keys) or b"\0", dtype=np.uint8).copy()
        self._offsets = np.array([0, *itertools.accumulate(map(len, keys))], dtype=np.int32)
        self._values = np.array(list(entries.values()) or [0], dtype=np.int32)
        n_slots = 8
        while n_slots < 2 * len(keys):
            n_slots *= 2
        slots, mask = [-1] * n_slots, n_slots - 1
        for index, key in enumerate(keys):
            slot = zlib.crc32(key) & mask
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = index
        self._slots = np.array(slots, dtype=np.int32)
        self.table = _Table(self._blob.ctypes.data, self._offsets.ctypes.data, self._values.ctypes.data,
                            self._slots.ctypes.data, len(keys), n_slots, max(map(len, keys), default=0))


# The characters the compiled reading takes: the basic multilingual plane and the next (emoji);
# a text with any other (the rarer ideographs of the planes above) is read in Python.
CHARACTERS = 0x20000
# blend_core.c's flags and BERT kinds (struct duet_chars).
_READABLE, _PY_SPACE, _BERT_SHIFT = 1, 2, 2
_BERT_KINDS = {"dropped": 0, "space": 1, "punctuation": 2, "word": 3}
# The one character Python lowers by its context (a final capital sigma becomes ς, another σ).
_CONTEXTUAL_LOWER = "\u03a3"


class _CharacterTable:
    """A ``_Characters`` and the arrays it points at. A character is readable in C where Python
    lowers it to one character (in the table) with no context, and where it is not white space to
    Python, BERT's normaliser leaves a text of it that its pre-tokenizer drops, splits at, isolates
    or keeps inside a word, as it would in any text (``vectors.bert_characters``)."""

    def __init__(self, bert: Sequence[tuple[str, str]], most_bytes: int) -> None:
        n = len(bert)
        flags, lower, normalised_at, normalised = bytearray(n), [0] * n, [0], bytearray()
        for code, (text, kind) in enumerate(bert):
            character = chr(code)
            surrogate = 0xD800 <= code <= 0xDFFF
            lowered = "" if surrogate else character.lower()
            space = not surrogate and character.isspace()
            readable = (not surrogate and len(lowered) == 1 and ord(lowered) < n and character != _CONTEXTUAL_LOWER
                        and (space or (kind in _BERT_KINDS and len(text.encode()) <= most_bytes)))
            flags[code] = ((_READABLE if readable else 0) | (_PY_SPACE if space else 0)
                           | _BERT_KINDS.get(kind, 0) << _BERT_SHIFT)
            lower[code] = ord(lowered) if readable else 0
            normalised += text.encode() if readable else b""
            normalised_at.append(len(normalised))
        self._flags = np.frombuffer(bytes(flags), dtype=np.uint8).copy()
        self._lower = np.array(lower, dtype=np.int32)
        self._normalised_at = np.array(normalised_at, dtype=np.int32)
        self._normalised = np.frombuffer(bytes(normalised) or b"\0", dtype=np.uint8).copy()
        self.table = _Characters(self._flags.ctypes.data, self._lower.ctypes.data, self._normalised_at.ctypes.data,
                                 self._normalised.ctypes.data, n)


@functools.cache
def _characters(bert: tuple[tuple[str, str], ...], most_bytes: int) -> _CharacterTable:
    """One table per process and tokenizer reading (immutable: every detector shares it)."""
    return _CharacterTable(bert, most_bytes)


@dataclass(frozen=True, slots=True)
class Reading:
    """What ``duet_blend_detect`` reads a request's text with: the shape features' columns by name,
    the programming words (``features.PROGRAMMING``), the WordPiece vocabulary (a token per subword
    id), the hashed parts' (first column, size) in ``blend_features.BUCKETS``' order, and the
    model's temperature and familiarity cut (its answer is the probabilities); ``characters``:
    how the tokenizer reads each character below ``CHARACTERS`` (``vectors.bert_characters``)."""

    shapes: Mapping[str, int]
    programming: Iterable[str]
    vocabulary: Sequence[str]
    characters: Sequence[tuple[str, str]]
    parts: Sequence[tuple[int, int]]
    temperature: float
    familiarity_cut: float


class BlendCore:
    """``scores``: one request's per-task scores and familiarity from its columns and span ids, in
    one call; ``detect``: its probabilities from its text, reading it too (where it reads every
    character; else None, for Python to read). Holds the tables it points C at (weights, vectors,
    blocks, strings), so they outlive it."""

    def __init__(self, library: ctypes.CDLL, weights: np.ndarray, rows: np.ndarray, blocks: np.ndarray,
                 reading: Reading | None = None) -> None:
        self._weights = np.ascontiguousarray(weights, dtype=np.float32)
        self._rows = np.ascontiguousarray(rows, dtype=np.float32)
        self._blocks = np.ascontiguousarray(blocks, dtype=np.float32)
        self._width, self._tasks = self._weights.shape
        self._n_rows, self._dim = self._rows.shape
        self._spans, dim, self._k = self._blocks.shape
        if dim != self._dim or self._k <= self._tasks:
            raise ValueError(f"blocks {self._blocks.shape} do not fit vectors {self._rows.shape} and {self._tasks} tasks")
        self._function = getattr(library, SYMBOL)
        # Pointers taken once: numpy's ``.ctypes`` builds an object on every access.
        self._pointers = (self._weights.ctypes.data, self._rows.ctypes.data, self._blocks.ctypes.data)
        # A new output buffer per call: ctypes lets go of the GIL during the call, so one shared
        # buffer would be written by two threads detecting at once.
        self._out_type = ctypes.c_double * (self._tasks + 1)
        self._detect, self._reading = getattr(library, READ_SYMBOL), getattr(library, READING_SYMBOL)
        self._sizes = tuple((ctypes.c_int32 * 3).in_dll(library, SIZES))
        self._model = self._read_model(reading) if reading is not None else None

    def _read_model(self, reading: Reading) -> _Model | None:
        """The model C reads with; None where it cannot (a vocabulary without WordPiece's unknown
        token, features other than the three hashed parts): Python reads every request then."""
        vocabulary = {token: i for i, token in enumerate(reading.vocabulary)}  # a repeated token: its last id, as WordPiece's
        if "[UNK]" not in vocabulary or len(reading.parts) != 3:
            return None
        self._crc = _crc_table()
        self._strings = (_StringTable(reading.shapes), _StringTable({w: i for i, w in enumerate(reading.programming)}),
                         _StringTable(vocabulary))
        self._characters = _characters(tuple(reading.characters), self._sizes[2])
        weights, rows, blocks = self._pointers
        return _Model(weights, self._width, self._tasks, rows, self._n_rows, self._dim, blocks, self._k, self._spans,
                      reading.temperature, reading.familiarity_cut, self._crc.ctypes.data,
                      *(strings.table for strings in self._strings), self._characters.table, vocabulary["[UNK]"],
                      (ctypes.c_int32 * 3)(*(at for at, _ in reading.parts)),
                      (ctypes.c_int32 * 3)(*(size for _, size in reading.parts)))

    def detect(self, user: str, user_chars: int, system: str, tools: str, shapes: Sequence[int]) -> list[float] | None:
        """The request's probability per task, read and scored in C; None where a text has a
        character C does not read, or is longer than it reads (Python reads those). ``user``: the
        user turn's window; ``user_chars``: the whole turn's length; ``system``: the system prompt's
        head; ``tools``: the tool results' heads joined by spaces; ``shapes``: the columns of the
        shape features read from the messages (roles, turns, lengths). Always None for a core given
        no ``Reading``, or one it cannot read with."""
        out = self._out_type()
        if not self._read(self._detect, (user, user_chars, system, tools, shapes), out):
            return None
        probabilities: list[float] = out[:self._tasks]
        return probabilities

    def read(self, user: str, user_chars: int, system: str, tools: str, shapes: Sequence[int]
             ) -> tuple[list[int], tuple[set[int], ...], tuple[list[int], ...]] | None:
        """What ``detect`` reads of the request, as ``blend_features.RequestIds``' fields (shape
        columns, each part's word columns, each span's subword ids); None where ``detect`` is."""
        most_columns, most_ids, _ = self._sizes
        columns, counts = (ctypes.c_int32 * most_columns)(), (ctypes.c_int32 * 4)()
        ids, id_counts = (ctypes.c_int32 * most_ids)(), (ctypes.c_int32 * 4)()
        if not self._read(self._reading, (user, user_chars, system, tools, shapes), columns, counts, ids, id_counts):
            return None
        cuts = list(itertools.accumulate(counts))
        words = tuple(set(columns[a:b]) for a, b in zip(cuts, cuts[1:], strict=False))
        id_cuts = [0, *itertools.accumulate(id_counts)]
        return list(columns[:cuts[0]]), words, tuple(list(ids[a:b]) for a, b in zip(id_cuts, id_cuts[1:], strict=False))

    def _read(self, function: Any, request: tuple[str, int, str, str, Sequence[int]], *out: Any) -> bool:
        """``function`` (duet_blend_detect or duet_blend_read) over the request's texts, writing
        ``out``; False where Python reads the request instead (no model to read with, a character
        or a length C does not take)."""
        if self._model is None:
            return False
        user, user_chars, system, tools, shapes = request
        user_bytes, system_bytes, tools_bytes = user.encode(), system.encode(), tools.encode()
        shape_array = array("i", shapes)
        status = function(ctypes.byref(self._model), user_bytes, len(user_bytes), user_chars,
                          system_bytes, len(system_bytes), tools_bytes, len(tools_bytes),
                          shape_array.buffer_info()[0], len(shape_array), *out)
        if status in _READ_IN_PYTHON:
            return False
        if status < 0:
            raise ValueError("a column or subword id outside the model's tables")
        return True

    def scores(self, columns: Iterable[int], counts: Sequence[int],
               spans: Sequence[Sequence[int]]) -> tuple[list[float], float, int]:
        """(score per task, familiarity, spans with a direction). ``columns``: the shape columns then
        each part's word columns, ``counts`` how many of each (the shapes first)."""
        column_array, count_array = array("i", columns), array("i", counts)
        ids, lengths = array("i"), array("i", map(len, spans))
        for span in spans:
            ids.extend(span)
        weights, rows, blocks = self._pointers
        out = self._out_type()
        filled = self._function(weights, self._width, self._tasks,
                                column_array.buffer_info()[0], count_array.buffer_info()[0], len(counts) - 1,
                                rows, self._n_rows, self._dim,
                                blocks, self._k, self._spans,
                                ids.buffer_info()[0], lengths.buffer_info()[0], out)
        if filled < 0:
            raise ValueError("a column or subword id outside the model's tables")
        values = out[:]
        return values[:self._tasks], values[self._tasks], filled
