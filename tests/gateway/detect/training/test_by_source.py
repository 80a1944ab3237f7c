"""The source-by-source measures: what counts as a leak, what abstention saves, which source is worst."""

from __future__ import annotations

from gateway.detect.model import Detection
from gateway.detect.training.by_source import score, worst

SURE_CHAT = Detection({"chat": 0.97, "reasoning": 0.01, "coding": 0.02})
CHAT_BUT_REASONING_PLAUSIBLE = Detection({"chat": 0.80, "reasoning": 0.15, "coding": 0.05})
UNSURE = Detection({"chat": 0.40, "reasoning": 0.35, "coding": 0.25})
SURE_REASONING = Detection({"reasoning": 0.98, "chat": 0.01, "coding": 0.01})
SURE_CODING = Detection({"coding": 0.99, "chat": 0.005, "reasoning": 0.005})


def test_a_confident_wrong_call_on_a_refused_task_leaks_and_an_abstention_does_not():
    found = [("reasoning", SURE_CHAT), ("reasoning", UNSURE), ("reasoning", SURE_REASONING),
             ("reasoning", CHAT_BUT_REASONING_PLAUSIBLE)]
    report = score(found, threshold=0.5, floor=0.05)
    assert report["confident_leak"] == 0.25  # only the sure chat call: the others keep reasoning plausible
    assert report["reasoning_kept"] == 0.5  # called reasoning, or abstained
    assert report["confusions"] == {"reasoning": {"chat": 2, "abstained": 1}}


def test_chat_reaches_fast_only_when_every_plausible_task_is_allowed_there():
    found = [("chat", SURE_CHAT), ("chat", CHAT_BUT_REASONING_PLAUSIBLE), ("chat", UNSURE), ("coding", SURE_CODING)]
    report = score(found, threshold=0.5, floor=0.05)
    assert report["chat_fast"] == round(1 / 3, 4) and report["coding_recall"] == 1.0
    assert report["confident_leak"] is None and report["extraction_recall"] is None
    assert report["n"] == {"chat": 3, "coding": 1} and report["abstained"] == 0.25


def test_the_worst_source_is_the_highest_leak_and_the_lowest_recall():
    def row(leak, kept):
        return {"confident_leak": leak, "reasoning_kept": kept, "coding_recall": None, "extraction_recall": 0.95,
                "chat_fast": None}
    verdict = worst({"a": row(0.01, 0.99), "b": row(0.05, 0.97), "c": row(None, 0.90)})
    assert verdict["confident_leak"] == {"value": 0.05, "source": "b", "goal": "<= 0.02", "met": False}
    assert verdict["reasoning_kept"]["source"] == "c" and not verdict["reasoning_kept"]["met"]
    assert verdict["extraction_recall"]["met"] and verdict["coding_recall"]["value"] is None
