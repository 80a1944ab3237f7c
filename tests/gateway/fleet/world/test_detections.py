"""The detector's answers on unseen prompts, for replays whose requests name no task: how one is
drawn, what a replayed prompt carries, and the shipped file."""

from __future__ import annotations

import pytest

from gateway.fleet.world.detections import DrawnDetector, UnseenDetections, unnamed, unnamed_prompt

TASKS = ["chat", "coding"]
DOC = {"tasks": TASKS, "detections": {"chat": {"a": [[0.9, 0.1]], "b": [[0.6, 0.4], [0.2, 0.8]]}, "coding": {}}}


def test_a_source_is_drawn_first_then_one_of_its_prompts() -> None:
    found = UnseenDetections.of(DOC)
    assert found.knows("chat") and not found.knows("coding")  # a task with no prompts is not drawn for
    assert found.draw("chat", 0.1, 0.99).probabilities == {"chat": 0.9, "coding": 0.1}  # source a: its one prompt
    assert found.draw("chat", 0.6, 0.1).task == "chat" and found.draw("chat", 0.6, 0.9).task == "coding"  # source b


def test_a_row_of_the_wrong_width_is_refused_naming_where() -> None:
    with pytest.raises(ValueError, match=r"detections\.chat\.a"):
        UnseenDetections.of({"tasks": TASKS, "detections": {"chat": {"a": [[1.0]]}}})


def test_the_drawn_detector_answers_a_replayed_prompt_and_nothing_else() -> None:
    detector = DrawnDetector(UnseenDetections.of(DOC))
    assert detector.detect_prompt(unnamed_prompt("chat", 0.6, 0.9)).task == "coding"
    with pytest.raises(ValueError, match="not a replayed request"):
        detector.detect_prompt("a b c d")
    with pytest.raises(ValueError):
        detector.detect_messages([{"role": "user", "content": "hi"}])


def test_the_share_is_checked_and_the_shipped_file_covers_the_traces_tasks() -> None:
    with pytest.raises(ValueError, match="unnamed-share 1.5"):
        unnamed(1.5)
    assert unnamed(0.0) == {"unnamed_share": 0.0, "detections": None, "keyed_tasks": frozenset()}
    assert unnamed(1.0, ["coding", "coding"])["keyed_tasks"] == frozenset({"coding"})
    with pytest.raises(ValueError, match="needs --unnamed-share"):
        unnamed(0.0, ["coding"])
    shipped = unnamed(0.5)["detections"]
    assert shipped.knows("chat") and shipped.knows("coding")  # the code and conv traces' tasks
    for task in ("chat", "coding"):
        for rows in shipped.by_task[task].values():
            assert all(abs(sum(row) - 1.0) < 1e-2 for row in rows)
