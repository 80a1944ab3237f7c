"""The shipped detector: it loads as package data, answers in [0, 1], and abstains as documented."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from gateway.detect import Detection, TaskDetector
from gateway.detect.model import MODEL_FILE

ROOT = Path(__file__).resolve().parents[3]
DETECTOR = TaskDetector.builtin()


def test_the_model_file_is_package_data_and_loads_from_an_installed_copy(tmp_path):
    """What setuptools would install (pyproject's package-data globs over the package's files),
    copied alone into a fresh directory and imported by an isolated interpreter (no checkout
    on its path, numpy unimportable: serving needs only the standard library), loads and detects."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    assert any(fnmatch(MODEL_FILE, g) for g in globs)
    site = tmp_path / "site"
    for package in ("gateway", "gateway/detect"):
        (site / package).mkdir(parents=True)
        for path in (ROOT / package).iterdir():
            if path.suffix == ".py" or any(fnmatch(path.name, g) for g in globs):
                shutil.copy(path, site / package / path.name)
    code = (f"import sys; sys.path[:0] = [{str(site)!r}]; sys.modules['numpy'] = None\n"
            "from gateway.detect import TaskDetector\n"
            "d = TaskDetector.builtin(); assert d.__module__ and __import__('gateway').__file__.startswith(sys.path[0])\n"
            "print(d.detect_messages([{'role': 'user', 'content': 'Solve for x: 3x + 4 = 19.'}]).task)")
    out = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "reasoning"


def test_probabilities_are_a_distribution_over_its_tasks():
    found = DETECTOR.detect_messages([{"role": "user", "content": "hello"}])
    assert set(found.probabilities) == set(DETECTOR.tasks)
    assert abs(sum(found.probabilities.values()) - 1) < 1e-9 and 0 < found.confidence <= 1


def test_plausible_tasks_above_the_floor_or_all_below_the_threshold():
    found = Detection({"chat": 0.90, "reasoning": 0.07, "coding": 0.03})
    assert found.plausible(threshold=0.8, floor=0.05) == {"chat", "reasoning"}
    assert found.plausible(threshold=0.95, floor=0.05) == {"chat", "reasoning", "coding"}
    assert found.plausible(threshold=0.8, floor=0.01) == {"chat", "reasoning", "coding"}


def test_among_renormalises_over_the_configs_tasks():
    found = Detection({"chat": 0.5, "reasoning": 0.25, "coding": 0.25}).among(frozenset({"chat", "coding"}))
    assert found.probabilities == {"chat": 2 / 3, "coding": 1 / 3}


def test_empty_and_odd_messages_still_answer():
    for messages in ([], [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], ["not a dict"],
                     [{"role": "user", "content": None}]):
        assert DETECTOR.detect_messages(messages).task in DETECTOR.tasks
    assert DETECTOR.detect_prompt("def f(x):\n    return x").task in DETECTOR.tasks


def test_the_detectors_scores_are_the_weights_of_its_features_names_summed():
    """detect looks tokens up by part without spelling each feature, and sums the weights as packed
    integers; the scores are the bias plus each named feature's weights, once per feature."""
    from gateway.detect.features import feature_ids, message_parts, prompt_parts

    requests = [
        [{"role": "system", "content": "You extract entities as JSON."}, {"role": "user", "content": "Invoice 42: ACME, $1,200"}],
        [{"role": "user", "content": "def add(a, b):\n    return a + b\n\nWhy does this fail? " * 80}],
        [{"role": "user", "content": "Check the order"}, {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
         {"role": "tool", "content": '{"status": "shipped", "eta": "2025-01-03"}'}, {"role": "tool", "content": "shipped"}],
    ]
    for parts in [*map(message_parts, requests), prompt_parts("Natalia sold clips to 48 of her friends. How many?")]:
        ids = feature_ids(parts.names(), DETECTOR._vocabulary)
        assert len(ids) > 5
        expected = [b + sum(DETECTOR._weights[i][k] for i in ids) for k, b in enumerate(DETECTOR._bias)]
        assert DETECTOR.scores(parts) == pytest.approx(expected, abs=1e-6)


def test_packed_scores_hold_negative_and_large_weights_exactly():
    """Each task's field of the packed sum reads back its own sum: negative weights borrow from no
    neighbour, and float16's extremes (its largest and smallest magnitudes) are exact."""
    from gateway.detect.features import message_parts

    tasks = ("a", "b", "c")
    vocabulary = {"u:x": 0, "u:y": 1, "last:user": 2}
    weights = [(-65504.0, 2.0**-24, 3.5), (-1.0, -2.0**-24, 65504.0), (0.25, -0.5, -65504.0)]
    detector = TaskDetector(tasks, vocabulary, weights, (-0.125, 0.0, 1.0))
    parts = message_parts([{"role": "user", "content": "x y x"}])
    assert detector.scores(parts) == [-65504.0 - 1.0 + 0.25 - 0.125, 0.0 - 0.5, 3.5 + 65504.0 - 65504.0 + 1.0]


def test_a_follow_up_to_a_puzzle_keeps_reasoning_plausible():
    """Alone, "Why?" reads as chat and a fast variant refusing reasoning could take it; after a
    puzzle it is read with the puzzle, and reasoning stays among the plausible tasks."""
    threshold, floor = DETECTOR.meta["threshold"], DETECTOR.meta["floor"]
    alone = DETECTOR.detect_messages([{"role": "user", "content": "Why?"}])
    assert "reasoning" not in alone.plausible(threshold, floor)
    puzzle = "A shop sells pens at $7 each and gives one free for every 3 bought. How much do 16 pens cost?"
    follow_up = DETECTOR.detect_messages([{"role": "user", "content": puzzle}, {"role": "assistant", "content": "$84"},
                                          {"role": "user", "content": "Why?"}])
    assert "reasoning" in follow_up.plausible(threshold, floor)


def test_familiarity_is_the_share_of_the_user_turns_words_the_model_knows():
    known = DETECTOR.familiarity([{"role": "user", "content": "Write a python function"}])
    half = DETECTOR.familiarity([{"role": "user", "content": "write python zqxjv wvkqz"}])
    assert known == 1.0 and half == 0.5
    assert DETECTOR.familiarity([{"role": "user", "content": ""}]) == 1.0
