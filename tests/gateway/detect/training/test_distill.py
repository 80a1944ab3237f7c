"""The distilled vectors' file: written as int8 rows with a scale, read back as the same
directions, and a text's vector the unit sum of its WordPiece subwords' rows."""

from __future__ import annotations

import numpy as np

from gateway.detect.training.distill import save, sif_weights
from gateway.detect.vectors import StaticVectors


def test_sif_weights_keep_rare_words_and_damp_common_ones() -> None:
    w = sif_weights(30_000)
    assert w[0] == w[1996] < 0.05 and w[29_999] > 0.95
    assert np.all(np.diff(w[1996:]) >= 0)


def test_saved_rows_read_back_in_their_direction_and_texts_split_by_wordpiece(tmp_path) -> None:
    tokens = ["[PAD]", "[UNK]", "play", "##ing", "chess", "!"]
    rows = np.random.default_rng(3).normal(size=(len(tokens), 16)).astype(np.float32)
    save(tmp_path / "v.npz", tokens, rows)
    vectors = StaticVectors.load(tmp_path / "v.npz")
    assert vectors.ids("Playing CHESS!") == [2, 3, 4, 5]
    expected = rows[[2, 3, 4, 5]].sum(axis=0)
    expected /= np.linalg.norm(expected)
    assert float(vectors.of("Playing CHESS!") @ expected) > 0.999
    assert not vectors.of("").any() and vectors.ids("") == []
