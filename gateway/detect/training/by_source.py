"""Judged source by source: for each public source, a detector that never saw it, measured on all
of it (issue 34's headline evaluation).

The goals, on the *worst* source, against a parity verdict (``FAST_ALLOWS``: the example H100
config's fast variant, which serves chat, coding, agent and extraction and refuses reasoning and
long-context):
- **confident leak** <= 2%: a prompt of a refused task whose plausible tasks (the detector not
  abstaining) are all allowed fast;
- **reasoning kept** >= 95%: reasoning prompts called reasoning or abstained on (abstaining is
  safe: every task stays plausible, so the request goes only where all are allowed);
- **coding and extraction recall** >= 90%: called their own task;
- **chat reaching fast** >= 85%: chat prompts whose plausible tasks are all allowed fast.

A source's numbers come from a detector trained without it, at the threshold and floor that
detector's own training chose (never on the source scored)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from gateway.detect.model import Detection
from gateway.detect.training.evaluate import FAST_ALLOWS

GOALS = {"confident_leak": ("<=", 0.02), "reasoning_kept": (">=", 0.95), "coding_recall": (">=", 0.90),
         "extraction_recall": (">=", 0.90), "chat_fast": (">=", 0.85)}


class Item(Protocol):
    @property
    def task(self) -> str: ...
    @property
    def messages(self) -> list[dict[str, Any]]: ...


def _share(hits: int, total: int) -> float | None:
    return None if total == 0 else round(hits / total, 4)


def score(found: Sequence[tuple[str, Detection]], threshold: float, floor: float,
          fast_allows: frozenset[str] = FAST_ALLOWS) -> dict[str, Any]:
    """The goals' measures over (label, detection) pairs, with counts and the confusions
    (label -> called -> count, errors only). A measure whose task is absent is None."""
    def of(task: str) -> list[Detection]:
        return [d for label, d in found if label == task]

    def plausible_fast(d: Detection) -> bool:
        return d.plausible(threshold, floor) <= fast_allows

    refused = [d for label, d in found if label not in fast_allows]
    reasoning, chat = of("reasoning"), of("chat")
    confusions: dict[str, dict[str, int]] = {}
    for label, d in found:
        called = "abstained" if d.confidence < threshold else d.task
        if called != label:
            row = confusions.setdefault(label, {})
            row[called] = row.get(called, 0) + 1
    return {
        "n": dict(Counter(label for label, _ in found)),
        "confident_leak": _share(sum(plausible_fast(d) for d in refused), len(refused)),
        "reasoning_kept": _share(sum(d.task == "reasoning" or d.confidence < threshold for d in reasoning),
                                 len(reasoning)),
        "coding_recall": _share(sum(d.task == "coding" for d in of("coding")), len(of("coding"))),
        "extraction_recall": _share(sum(d.task == "extraction" for d in of("extraction")), len(of("extraction"))),
        "agent_recall": _share(sum(d.task == "agent" for d in of("agent")), len(of("agent"))),
        "chat_fast": _share(sum(plausible_fast(d) for d in chat), len(chat)),
        "abstained": _share(sum(d.confidence < threshold for _, d in found), len(found)),
        "accuracy": _share(sum(d.task == label for label, d in found), len(found)),  # top-1, abstentions aside
        "confusions": confusions,
    }


def judge(detect: Any, items: Iterable[Item]) -> list[tuple[str, Detection]]:
    return [(item.task, detect(item.messages)) for item in items]


def worst(by_source: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per goal: the worst source's value and name, and whether the goal holds there."""
    out = {}
    for goal, (direction, bound) in GOALS.items():
        values = [(r[goal], name) for name, r in by_source.items() if r[goal] is not None]
        if not values:
            out[goal] = {"value": None, "source": None, "goal": f"{direction} {bound}", "met": None}
            continue
        value, name = (max if direction == "<=" else min)(values)
        out[goal] = {"value": value, "source": name, "goal": f"{direction} {bound}",
                     "met": value <= bound if direction == "<=" else value >= bound}
    return out
