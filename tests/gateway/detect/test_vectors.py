"""Static vectors: a text's row is the unit sum of its subwords' rows, whichever way it is asked for
(one text or several at once), a run's ids are the tokenizer's for the whole text, and the memo
of runs read neither changes an answer nor grows past its bound."""

from __future__ import annotations

import numpy as np

from gateway.detect import vectors as vectors_module
from gateway.detect.vectors import StaticVectors

WORDS = ["[UNK]", "extract", "names", "from", "the", "email", ",", ".", "!", "who", "is", "taller", "##er", "tall"]


def _vectors() -> StaticVectors:
    rows = np.random.default_rng(5).normal(size=(len(WORDS), 6)).astype(np.float32)
    return StaticVectors(WORDS, rows)


def _by_hand(vectors: StaticVectors, text: str) -> np.ndarray:
    ids = vectors._tokenizer.encode(text, add_special_tokens=False).ids  # the whole text, no memo
    if not ids:
        return np.zeros(vectors.dim, dtype=np.float32)
    total = vectors._rows[ids].sum(axis=0)
    return total / np.linalg.norm(total)


TEXTS = ["Extract the names from the email.", "", "Who is taller, tall or taller?!", " \n\t ", "zzz the\tthe\n email"]


def test_each_texts_row_is_the_unit_sum_of_its_subwords_alone_or_together() -> None:
    vectors = _vectors()
    together = vectors.of_each(TEXTS)
    assert together.shape == (len(TEXTS), vectors.dim)
    for k, text in enumerate(TEXTS):
        assert np.allclose(together[k], _by_hand(vectors, text), atol=1e-6), text
        assert np.allclose(vectors.of(text), _by_hand(vectors, text), atol=1e-6), text
    assert not together[1].any() and not together[3].any()  # no subword at all: zeros, not NaN


def test_remembered_runs_give_the_tokenizers_ids_for_the_whole_text() -> None:
    vectors = _vectors()
    text = "Who is taller, tall or taller?! the email."
    expected = vectors._tokenizer.encode(text, add_special_tokens=False).ids
    assert vectors.ids(text) == expected  # every run novel: read in one pass
    assert vectors.ids(text) == expected  # every run remembered
    assert vectors.ids("taller, the email.") == vectors._tokenizer.encode("taller, the email.", add_special_tokens=False).ids


def test_each_novel_run_gets_the_ids_it_has_alone_whatever_its_neighbours() -> None:
    vectors = _vectors()
    rng = np.random.default_rng(11)
    pieces = ["who", "tall", "##er", "taller", ",", "!", "?", "zzz", "\u0301", "e\u0301mail", "the.email", "x"]
    for _ in range(50):
        runs = list(dict.fromkeys("".join(rng.choice(pieces, size=rng.integers(1, 4))) for _ in range(rng.integers(1, 9))))
        read = vectors._read(runs)
        assert list(read) == runs
        for run in runs:
            assert read[run] == vectors._tokenizer.encode(run, add_special_tokens=False).ids, run


def test_the_memo_is_forgotten_when_it_would_pass_its_bound(monkeypatch) -> None:
    monkeypatch.setattr(vectors_module, "MEMO_LIMIT", 4)
    vectors = _vectors()
    vectors.ids("who is tall")
    assert len(vectors._memo) == 3
    assert vectors.ids("the email names .") == vectors._tokenizer.encode("the email names .", add_special_tokens=False).ids
    assert len(vectors._memo) == 4  # cleared first: 3 + 4 would pass 4


def test_a_span_whose_rows_cancel_has_no_direction_as_one_with_no_subword() -> None:
    rows = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, -2.0], [3.0, 4.0]], dtype=np.float32)
    vectors = StaticVectors(["[UNK]", "up", "down", "side"], rows)
    filled, units = vectors.units([[1, 2], [], [3], [1]])
    assert filled == (2, 3)
    assert np.allclose(units, [[0.6, 0.8], [1 / np.sqrt(5), 2 / np.sqrt(5)]], atol=1e-6)
    assert not vectors.of("up down").any()
