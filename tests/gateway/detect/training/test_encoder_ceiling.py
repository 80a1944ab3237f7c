"""The encoder-ceiling measurement: the spans it encodes, its cache keyed by the texts, and each
recipe's rows judged leave-one-source-out (a fake encoding stands in for the teacher's minutes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gateway.detect.training import encoder_ceiling
from gateway.detect.training.encoder_ceiling import Request, encodings, judge, rows_of, spans
from gateway.detect.vectors import StaticVectors

WORDS = ["[UNK]", "extract", "names", "from", "the", "email", "solve", "riddle", "who", "is", "taller", "write",
         "a", "poem", "about", "sea"]


def _vectors() -> StaticVectors:
    return StaticVectors(WORDS, np.random.default_rng(3).normal(size=(len(WORDS), 8)).astype(np.float32))


def _requests() -> list[Request]:
    asks = {"extraction": "Extract the names from the email.", "reasoning": "Solve the riddle: who is taller?",
            "chat": "Write a poem about the sea."}
    out = []
    for source in ("one", "two", "three", "synth"):
        for task, text in asks.items():
            for k in range(12):
                out.append(Request(f"{source}/{task}/{k}", task, source, [{"role": "user", "content": f"{text} {k}"}]))
    return out


def test_the_spans_are_the_system_head_with_the_window_and_the_instruction() -> None:
    whole, ask = spans([{"role": "system", "content": "You extract."},
                        {"role": "user", "content": "List the names. Dear Ann, see you. Thanks, Bob"}])
    assert whole.startswith("You extract.\n") and "Dear Ann" in whole
    assert ask == "List the names.\nThanks, Bob"
    assert spans([{"role": "system", "content": "Be brief."}, {"role": "user", "content": ""}])[1] == "Be brief."


def test_encodings_come_from_the_cache_only_for_the_same_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def fake_encode(encoder: object, texts: list[str], log: object = None) -> np.ndarray:
        calls.append(len(texts))
        return np.full((len(texts), 384), float(len(calls)), dtype=np.float32)

    monkeypatch.setattr(encoder_ceiling, "SentenceEncoder", lambda *a, **k: object())
    monkeypatch.setattr(encoder_ceiling, "teacher_folder", lambda: tmp_path)
    monkeypatch.setattr(encoder_ceiling, "encode", fake_encode)
    requests, cache = _requests()[:5], tmp_path / "rows.npz"
    first = encodings(requests, cache)
    assert first.shape == (5, 768) and calls == [5, 5]
    assert np.array_equal(encodings(requests, cache), first) and calls == [5, 5]  # read back, not encoded
    changed = [*requests[:4], Request(requests[4].id, "chat", "one", [{"role": "user", "content": "other words"}])]
    encodings(changed, cache)
    assert calls == [5, 5, 5, 5]  # a text changed: encoded again


def test_each_recipe_is_judged_on_every_source_but_the_templates() -> None:
    requests = _requests()
    rng = np.random.default_rng(0)
    centres = {"extraction": rng.normal(size=32), "reasoning": rng.normal(size=32), "chat": rng.normal(size=32)}
    encoded = np.stack([centres[r.task] + 0.1 * rng.normal(size=32) for r in requests]).astype(np.float32)
    widths = {}
    for recipe in encoder_ceiling.RECIPES:
        rows, vector_slice = rows_of(recipe, requests, encoded, _vectors())
        assert len(rows) == len(requests) and vector_slice.stop > vector_slice.start
        widths[recipe] = rows.shape[1]
    assert widths["encoder+blend"] == widths["encoder"] - 1 + widths["blend"]  # one constant, the blend row's
    # Judging costs a nested fit per source: the encoder recipe alone here (the blend's is the blend's test).
    by_source = judge("encoder", requests, encoded, _vectors(), log=lambda line: None)
    assert set(by_source) == {"one", "two", "three"}
    assert all(r["top1"] == 1.0 for r in by_source.values())  # the fake encoding separates the tasks
    with pytest.raises(ValueError, match="unknown recipe"):
        rows_of("words", requests, encoded, _vectors())
