"""Static subword vectors: a text's meaning as the normalised sum of its WordPiece tokens' rows, one
table lookup per subword (``StaticVectors.of``). The table is distilled from a sentence encoder by
``make detector-vectors`` (``gateway.detect.training.distill``, which writes it to ``VECTORS``):
the running gateway needs neither the teacher, torch, nor a network, and knows words our labels
never held (a token's vector comes from the teacher's pretraining)."""

from __future__ import annotations

import functools
import io
import itertools
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

# Where ``make detector-vectors`` writes the table and the gateway reads it.
VECTORS = Path.home() / ".cache" / "duet" / "models" / "static_vectors.npz"
# Runs between whitespace (``str.split``, which splits where ``\\s`` would, in a quarter of the
# time), where BERT's pre-tokenizer splits too (it splits inside a run itself, at punctuation and
# around CJK characters, so a run read alone gives the ids it gives in the text).
# A run's ids are remembered, so a request's text costs one dictionary lookup per word instead of
# the tokenizer's pass (0.3 ms for a 1,000-character window, most of the detector's time before).
# Runs remembered, then forgotten all at once (a flood of novel words cannot grow it unbounded).
MEMO_LIMIT = 200_000


def _normalizer() -> normalizers.Normalizer:
    return normalizers.BertNormalizer(lowercase=True, strip_accents=True)


def _pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.BertPreTokenizer()


@functools.cache
def bert_characters(limit: int) -> tuple[tuple[str, str], ...]:
    """How the tokenizer's normaliser and pre-tokenizer read each character below ``limit`` alone:
    its normalised text, and ``dropped`` (nothing left), ``space``, ``punctuation`` (one character,
    a piece of its own: punctuation, and the ideographs the normaliser spaces apart, whose text here
    is the ideograph without its spaces), ``word`` (kept whole inside a word) or ``mixed`` (none of
    these). Asked of the tokenizer itself, once per process (~0.3 s for the 131,072 characters the
    compiled reading takes), so the compiled reading (``gateway.detect.native``) agrees with it by
    construction."""
    normalizer, splitter = _normalizer(), _pre_tokenizer()
    out = []
    for code in range(limit):
        text = "" if 0xD800 <= code <= 0xDFFF else normalizer.normalize_str(chr(code))  # surrogates: no text
        alone = text.strip()
        pieces = [piece for piece, _ in splitter.pre_tokenize_str(f"x{text}x")]
        if not text:
            kind = "dropped"
        elif pieces == ["x", "x"]:
            kind = "space"
        elif pieces == ["x", alone, "x"] and len(alone) == 1:
            text, kind = alone, "punctuation"
        elif pieces == [f"x{text}x"]:
            kind = "word"
        else:
            kind = "mixed"
        out.append((text, kind))
    return tuple(out)


class StaticVectors:
    """``of(text)``: the text's unit vector (zeros for a text with no known subword)."""

    def __init__(self, tokens: list[str], rows: np.ndarray) -> None:
        self.dim = int(rows.shape[1])
        self.tokens = tuple(tokens)  # the WordPiece vocabulary, a token per subword id
        self._rows = np.ascontiguousarray(rows, dtype=np.float32)
        self._tokenizer = Tokenizer(models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]"))
        self._tokenizer.normalizer = _normalizer()
        self._tokenizer.pre_tokenizer = _pre_tokenizer()
        self._eye = np.eye(8, dtype=np.float32)  # as many spans as the detector reads, and more
        self._memo: dict[str, list[int]] = {}

    @property
    def rows(self) -> np.ndarray:
        """The table: one row per subword id (read-only: every detector of the process shares it)."""
        view = self._rows.view()
        view.flags.writeable = False
        return view

    @classmethod
    def from_bytes(cls, data: bytes) -> StaticVectors:
        with np.load(io.BytesIO(data)) as stored:
            rows = stored["rows"].astype(np.float32) * stored["scale"].astype(np.float32)[:, None]
            return cls([str(t) for t in stored["tokens"]], rows)

    @classmethod
    def load(cls, path: Path = VECTORS) -> StaticVectors:
        return cls.from_bytes(path.read_bytes())

    def ids(self, text: str) -> list[int]:
        """The text's subword ids, run by run (split at whitespace), each run's as the tokenizer
        reads it alone; the runs not remembered are read in one pass over them joined (one call,
        not one per novel word: a prompt of novel words would cost ~10 µs a word otherwise)."""
        memo, runs = self._memo, text.split()
        found = list(map(memo.get, runs))  # in C: most runs are remembered
        if None in found:
            novel = [run for run in dict.fromkeys(runs) if run not in memo]
            if len(memo) + len(novel) > MEMO_LIMIT:
                memo.clear()
            memo.update(self._read(novel))
            found = list(map(memo.__getitem__, runs))
        return list(itertools.chain.from_iterable(filter(None, found)))  # no None left; [] adds nothing

    def _read(self, runs: list[str]) -> dict[str, list[int]]:
        """Each run's ids, from one encoding of the runs joined by spaces (a token belongs to the
        run its first character is in: the tokenizer never joins across whitespace, so a run's
        tokens are consecutive). Tokens are assigned to runs in numpy and cut into slices, not
        one bisect and append each (a third of a prompt of 150 novel words' time before)."""
        out: dict[str, list[int]] = {run: [] for run in runs}
        encoding = self._tokenizer.encode(" ".join(runs), add_special_tokens=False)
        ids = encoding.ids
        if not ids:
            return out
        starts = np.fromiter(itertools.accumulate((len(run) + 1 for run in runs[:-1]), initial=0), dtype=np.int64,
                             count=len(runs))
        firsts = np.fromiter((start for start, _ in encoding.offsets), dtype=np.int64, count=len(ids))
        owner = np.searchsorted(starts, firsts, side="right") - 1
        cuts = (np.flatnonzero(owner[1:] != owner[:-1]) + 1).tolist()
        bounds = [0, *cuts, len(ids)]
        for run, begin, end in zip(owner[[0, *cuts]].tolist(), bounds, bounds[1:], strict=False):
            out[runs[run]] = ids[begin:end]
        return out

    def of(self, text: str) -> np.ndarray:
        row: np.ndarray = self.of_each([text])[0]
        return row

    def of_each(self, texts: list[str]) -> np.ndarray:
        """One unit row per text, stacked (zeros for a text with no known subword)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        filled, units = self.units([self.ids(text) for text in texts])
        if filled:
            out[list(filled)] = units
        return out

    def units(self, spans: list[list[int]]) -> tuple[tuple[int, ...], np.ndarray]:
        """The spans (each a text's subword ids) with a vector, by index, and their unit rows
        stacked: gathered in one indexing and summed per span in one ``reduceat`` (a numpy call
        per span cost the served detector half its time in call overheads)."""
        filled = tuple(k for k, ids in enumerate(spans) if ids)
        if not filled:
            return (), np.zeros((0, self.dim), dtype=np.float32)
        lengths = [len(spans[k]) for k in filled]
        # Summed per span as one product with a 0/1 (span x token) matrix: a third of
        # ``np.add.reduceat``'s time at a request's sizes.
        eye = self._eye if len(filled) <= len(self._eye) else np.eye(len(filled), dtype=np.float32)
        segments = np.repeat(eye[:len(filled), :len(filled)], lengths, axis=1)
        sums = segments @ self._rows.take(list(itertools.chain.from_iterable(spans[k] for k in filled)), axis=0)
        norms = np.sqrt(np.einsum("ij,ij->i", sums, sums))
        if float(norms.min()) == 0.0:  # subwords whose rows cancel: no direction, as a span with none
            kept = norms > 0
            filled, sums, norms = tuple(k for k, keep in zip(filled, kept, strict=True) if keep), sums[kept], norms[kept]
        return filled, sums / norms[:, None]
