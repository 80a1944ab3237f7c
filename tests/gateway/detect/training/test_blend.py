"""The blend recipe: its features, a fit that weighs sources alike, familiarity, and abstention
chosen on other sources than the one scored."""

from __future__ import annotations

import numpy as np

from gateway.detect.blend_features import BlendFeatures, instruction
from gateway.detect.training.blend import (
    FAMILIARITY_QUANTILES,
    LEAK_GOAL,
    MIN_SHAPE_REQUESTS,
    RIDGES,
    TASKS,
    TEMPERATURES,
    Abstention,
    Answers,
    choose,
    choose_nested,
    fit,
    groups,
    leave_one_out,
    shape_names,
)
from gateway.detect.training.evaluate import FAST_ALLOWS
from gateway.detect.vectors import StaticVectors

WORDS = ["[UNK]", "extract", "names", "from", "the", "email", "solve", "riddle", "who", "is", "taller", "write",
         "function", "sort", "list", "python", "hello", "poem", "sea", "about", "a"]


def _vectors() -> StaticVectors:
    rows = np.random.default_rng(7).normal(size=(len(WORDS), 8)).astype(np.float32)
    return StaticVectors(WORDS, rows)


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_the_instruction_is_the_first_and_last_sentence() -> None:
    assert instruction("Extract the names. Dear Ann, see you at noon. Thanks, Bob") == \
        "Extract the names.\nThanks, Bob"
    assert instruction("Solve the riddle") == "Solve the riddle"
    assert instruction("") == ""


def test_a_row_holds_shape_hashed_words_vectors_and_a_constant() -> None:
    requests = [_user("Extract the names from the email."), _user("hello")] * MIN_SHAPE_REQUESTS
    shapes = shape_names(requests)
    assert "first:extract" in shapes and shape_names(requests[:2]) == []  # seen too seldom: no column
    features = BlendFeatures(_vectors(), shapes)
    row = features.of(requests[0])
    assert row.shape == (features.width,) and row[-1] == 1.0
    assert row[shapes.index("first:extract")] == 1.0 and row[features.vector_slice].any()
    other = features.of(requests[1])
    assert not np.array_equal(row, other)
    hashed = slice(len(shapes), features.vector_slice.start)
    assert row[hashed].any() and abs(float(np.linalg.norm(row[hashed])) - 1.0) < 1e-5  # the user part alone: unit


def _toy() -> tuple[np.ndarray, list[str], list[str], BlendFeatures]:
    texts = {("extraction", "a"): "Extract the names from the email.", ("extraction", "b"): "extract names email",
             ("reasoning", "a"): "Solve the riddle: who is taller?", ("reasoning", "b"): "riddle who is taller",
             ("coding", "a"): "Write a python function to sort the list.", ("coding", "b"): "python sort list function",
             ("chat", "a"): "Write a poem about the sea.", ("chat", "b"): "hello poem sea",
             ("reasoning", "c"): "Who is taller? Solve it.", ("chat", "c"): "A poem about the sea, hello."}
    requests, tasks, sources = [], [], []
    for (task, source), text in texts.items():
        n = 30 if source == "a" else 3  # source a outnumbers b and c tenfold
        requests += [_user(text)] * n
        tasks += [task] * n
        sources += [source] * n
    features = BlendFeatures(_vectors(), shape_names(requests))
    return np.stack([features.of(m) for m in requests]), tasks, sources, features


def test_every_source_of_a_task_weighs_alike_in_the_fit() -> None:
    rows, tasks, sources, features = _toy()
    trained = groups(rows, tasks, sources, features.vector_slice)
    weight = {(g.task, g.source): float(g.target[-1].sum()) for g in trained}  # the constant column: weight x n
    assert abs(weight[("chat", "a")] - weight[("chat", "b")]) < 1e-9  # 30 requests against 3
    fitted = fit(trained, features.vector_slice)[0]
    predicted = fitted.probabilities(rows).argmax(axis=1)
    assert [TASKS[k] for k in predicted] == tasks


def test_familiarity_is_highest_for_requests_like_the_training_ones() -> None:
    rows, tasks, sources, features = _toy()
    fitted = fit(groups(rows, tasks, sources, features.vector_slice), features.vector_slice)[0]
    stranger = features.of(_user("zzz qqq"))[None, :]  # no known subword: a zero vector
    assert fitted.familiarity(rows).min() > float(fitted.familiarity(stranger)[0])


def test_the_chosen_abstention_keeps_every_sources_leak_within_the_goal() -> None:
    """Reasoning answered as chat with confidence 0.7 leaks unless the threshold is above it;
    chat at 0.9 then still goes fast."""
    n = 50
    chat = np.tile(np.array([[0.9, 0.05, 0.05, 0, 0, 0]]), (n, 1))
    reasoning_as_chat = np.tile(np.array([[0.7, 0.0, 0.3, 0, 0, 0]]), (n, 1))
    familiar = np.ones(n)
    answers = [Answers.of(["chat"] * n, chat, familiar, FAST_ALLOWS),
               Answers.of(["reasoning"] * n, reasoning_as_chat, familiar, FAST_ALLOWS)]
    rule, chosen = choose(answers, np.ones(10))
    assert chosen["worst_leak"] <= LEAK_GOAL
    assert answers[0].fast(rule).all() and not answers[1].fast(rule).any()
    assert not answers[0].fast(Abstention(0.95, rule.floor, rule.familiarity)).any()  # the higher one costs chat
    assert 0.0 in FAMILIARITY_QUANTILES


def test_each_held_out_source_is_scored_by_a_model_and_rule_that_never_saw_it() -> None:
    rows, tasks, sources, features = _toy()
    trained = groups(rows, tasks, sources, features.vector_slice)
    judged = {name: rows[[k for k, s in enumerate(sources) if s == name]] for name in ("a", "b", "c")}
    labels = {name: [t for t, s in zip(tasks, sources, strict=True) if s == name] for name in judged}
    seen: list[str] = []
    out = leave_one_out(judged, labels, trained, features.vector_slice, log=seen.append)
    assert set(out) == {"a", "b", "c"} and len(seen) == 3
    for report in out.values():
        assert report["n"] and 0.2 <= report["threshold"] < 1.0 and report["accuracy"] is not None
        assert report["chosen_on_others"]["ridge"] in RIDGES and 0.0 <= report["top1"] <= 1.0


def test_the_temperature_is_chosen_with_the_rule_and_the_model_carries_it() -> None:
    """Sharper probabilities change what a threshold and a floor tell apart, so the temperature is
    one of the nested choices: the one reported is one tried, and the model answers at it."""
    rows, tasks, sources, features = _toy()
    trained = groups(rows, tasks, sources, features.vector_slice)
    judged = {name: rows[[k for k, s in enumerate(sources) if s == name]] for name in ("a", "b", "c")}
    labels = {name: [t for t, s in zip(tasks, sources, strict=True) if s == name] for name in judged}
    chosen = choose_nested(judged, labels, trained, features.vector_slice, held="c")
    assert chosen.report["temperature"] in TEMPERATURES
    assert chosen.fitted.temperature == chosen.report["temperature"]
    scores = rows[:3].astype(np.float64) @ chosen.fitted.weights * chosen.fitted.temperature
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    assert np.allclose(chosen.fitted.probabilities(rows[:3]), expected / expected.sum(axis=1, keepdims=True))
