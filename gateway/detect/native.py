"""The blend detector's arithmetic compiled (``blend_core.c``): built once per machine by ``duet
detect native`` (``make detector-native``) into ``~/.cache/duet/native``, loaded with ctypes.

Why: in a busy gateway the detector's numpy calls meet cold caches between requests, and their
per-call machinery, not the arithmetic, was most of what detection cost a request (docs/routing.md,
"What it costs the gateway"). One call into C replaces about ten of them. The numpy path stays:
training uses it, and a machine without a C compiler serves with it, with the same answers (to
1e-6; ``tests/gateway/detect/test_native.py``).

The library is named by a hash of its source and flags, so an edited source is never served by a
stale build: it is simply not found until it is built again."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from array import array
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from gateway.errors import DuetError

SOURCE = "blend_core.c"
# -O3 vectorises the sums (SSE2, every x86-64 has it); no -march=native: ~/.cache may be shared
# between machines of different CPU classes.
FLAGS = ("-O3", "-shared", "-fPIC")
NATIVE_DIR = Path.home() / ".cache" / "duet" / "native"
SYMBOL = "duet_blend_scores"


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
    function = getattr(library, SYMBOL, None)
    if function is None:
        return None
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,  # weights, width, tasks
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,  # columns, counts, parts
                         ctypes.c_void_p, ctypes.c_int, ctypes.c_int,  # rows, n_rows, dim
                         ctypes.c_void_p, ctypes.c_int, ctypes.c_int,  # blocks, k, spans
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]  # ids, lengths, out
    return library


class BlendCore:
    """``scores``: one request's per-task scores and familiarity from its columns and span ids, in
    one call. Holds the tables it points C at (weights, vectors, blocks), so they outlive it."""

    def __init__(self, library: ctypes.CDLL, weights: np.ndarray, rows: np.ndarray, blocks: np.ndarray) -> None:
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
