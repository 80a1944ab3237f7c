"""The blend detector as served: its document round trip, its answer equal to the training room's
for the same model, uniform (abstaining) on the unfamiliar, and the shipped model over the real
vectors table where ``make detector-vectors`` built it."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.detect import Detection
from gateway.detect.blend_features import BlendFeatures
from gateway.detect.blend_model import BlendDetector, VectorsMissing, _builtin, encode_array
from gateway.detect.training.blend import TASKS, TEMPERATURE, Abstention, fit, groups, shape_names
from gateway.detect.vectors import VECTORS, StaticVectors

WORDS = ["[UNK]", "extract", "names", "from", "the", "email", "solve", "riddle", "who", "is", "taller", "write",
         "function", "sort", "list", "python", "hello", "poem", "sea", "about", "a", "zebra", "quartz"]


def _vectors() -> StaticVectors:
    rows = np.random.default_rng(3).normal(size=(len(WORDS), 8)).astype(np.float32)
    return StaticVectors(WORDS, rows)


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


TRAINED = {"extraction": "Extract the names from the email.", "reasoning": "Solve the riddle: who is taller?",
           "coding": "Write a python function to sort the list.", "chat": "Write a poem about the sea.",
           "long-context": "the " * 200, "agent": "hello"}


def _document(familiarity: float) -> tuple[dict, BlendFeatures, object]:
    vectors = _vectors()
    requests = [_user(text) for text in TRAINED.values() for _ in range(12)]
    tasks = [task for task in TRAINED for _ in range(12)]
    shapes = shape_names(requests)
    features = BlendFeatures(vectors, shapes)
    rows = np.stack([features.of(m) for m in requests])
    fitted = fit(groups(rows, tasks, ["a"] * len(tasks), features.vector_slice), features.vector_slice)[0]
    weights, centroids = encode_array(fitted.weights), encode_array(fitted.centroids)
    document = {"tasks": list(TASKS), "shapes": shapes, "temperature": TEMPERATURE,
                "weights_f32": weights["f32"], "weights_shape": weights["shape"],
                "centroids_f32": centroids["f32"], "centroids_shape": centroids["shape"],
                "meta": {"threshold": 0.5, "floor": 0.1, "familiarity": familiarity}}
    return document, features, fitted


def test_the_served_answer_is_the_training_rooms_for_the_same_model() -> None:
    document, features, fitted = _document(familiarity=-2.0)
    served = BlendDetector.from_document(document, _vectors())
    for text in TRAINED.values():
        row = features.of(_user(text))[None, :]
        expected = Abstention(0.5, 0.1, -2.0).detections(fitted, row)[0]  # type: ignore[arg-type]
        got = served.detect_messages(_user(text))
        assert got.task == expected.task
        assert all(abs(got.probabilities[t] - expected.probabilities[t]) < 1e-4 for t in TASKS)
    assert served.detect_messages(_user(TRAINED["reasoning"])).task == "reasoning"
    assert served.detect_prompt(TRAINED["coding"]) == served.detect_messages(_user(TRAINED["coding"]))


SHAPED = [
    [{"role": "system", "content": "Extract the names."}, {"role": "user", "content": "the email from who"}],
    [{"role": "user", "content": "Write a python function."}, {"role": "assistant", "content": "", "tool_calls": [{}]},
     {"role": "tool", "content": "sort the list"}],
    [{"role": "user", "content": "Solve the riddle: who is taller?"}, {"role": "assistant", "content": "tall"},
     {"role": "user", "content": "who?"}],
    [{"role": "user", "content": "qqq"}],  # no known subword: no vectors at all
    [{"role": "system", "content": "zebra"}, {"role": "user", "content": ""}],
]


def test_the_sparse_served_answer_is_the_dense_rows_for_every_shape_of_request() -> None:
    document, features, fitted = _document(familiarity=-2.0)
    served = BlendDetector.from_document(document, _vectors())
    for messages in SHAPED:
        row = features.of(messages)[None, :]
        expected = Abstention(0.5, 0.1, -2.0).detections(fitted, row)[0]  # type: ignore[arg-type]
        got = served.detect_messages(messages)
        assert all(abs(got.probabilities[t] - expected.probabilities[t]) < 1e-4 for t in TASKS), messages
        v = row[0, features.vector_slice]
        nearest = float((fitted.centroids @ v).max()) / float(np.sqrt(v @ v)) if v.any() else 0.0  # type: ignore[attr-defined]
        assert abs(served.familiarity(messages) - nearest) < 1e-4, messages


def test_an_unfamiliar_request_gets_a_uniform_answer_that_abstains() -> None:
    document, _, _ = _document(familiarity=0.999)
    served = BlendDetector.from_document(document, _vectors())
    assert served.familiarity(_user("zebra quartz")) < 0.999
    found = served.detect_messages(_user("zebra quartz"))
    assert found == Detection({t: 1 / len(TASKS) for t in TASKS})
    assert found.plausible(0.5, 0.1) == frozenset(TASKS)
    # The same model with no cut answers with its weights.
    document["meta"]["familiarity"] = -2.0
    assert BlendDetector.from_document(document, _vectors()).detect_messages(_user("zebra quartz")).confidence > 1 / 6


def test_weights_that_do_not_fit_the_features_are_refused() -> None:
    document, _, _ = _document(familiarity=0.0)
    document["shapes"] = document["shapes"][1:]
    with pytest.raises(ValueError, match="weights are"):
        BlendDetector.from_document(document, _vectors())


def test_missing_vectors_say_how_to_build_them(tmp_path) -> None:
    with pytest.raises(VectorsMissing, match="make detector-vectors"):
        _builtin(tmp_path / "none.npz", None)


@pytest.mark.skipif(not VECTORS.exists(), reason="needs `make detector-vectors`")
def test_the_shipped_model_reads_plain_requests() -> None:
    shipped = BlendDetector.builtin()
    assert shipped.tasks == TASKS and {"threshold", "floor", "familiarity"} <= set(shipped.meta)
    threshold, floor = float(shipped.meta["threshold"]), float(shipped.meta["floor"])
    for text in ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
                 "How many clips did Natalia sell altogether in April and May?",
                 "If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies?"):
        assert "reasoning" in shipped.detect_messages(_user(text)).plausible(threshold, floor)
