"""How well the detector finds the task, and what its errors cost, on labelled samples.

Against one parity verdict (the tasks the fast variant is allowed): a **leak** is a request of a
refused task whose plausible tasks are all allowed (it may be served fast); the **cost of
abstention** is the share of requests of an allowed task whose plausible tasks are not all allowed
(they go to standard though fast could have served them). A **miss** is a request whose plausible
tasks leave out its own task: a leak under some parity verdict, so its rate bounds every verdict's
leak rate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.detect.model import Detection

# deploy/render/h100-70b.yaml's FP8 variant: what the issue measured against.
FAST_ALLOWS = frozenset({"chat", "coding", "agent", "extraction"})


@dataclass(frozen=True, slots=True)
class Judged:
    """One labelled request and the detector's answer."""

    task: str
    detection: Detection


def _share(hits: int, total: int) -> float | None:
    return None if total == 0 else hits / total


def evaluate(judged: Sequence[Judged], threshold: float, floor: float,
             fast_allows: frozenset[str] = FAST_ALLOWS) -> dict[str, Any]:
    """Per task: n, precision and recall of the detected task, miss rate, abstained share, share
    served fast; overall: leak rate (over requests of refused tasks), cost of abstention."""
    tasks = sorted({j.task for j in judged} | {t for j in judged for t in j.detection.probabilities})
    rows: dict[str, dict[str, Any]] = {}
    for task in tasks:
        mine = [j for j in judged if j.task == task]
        called = [j for j in judged if j.detection.task == task]
        plausible = [j.detection.plausible(threshold, floor) for j in mine]
        rows[task] = {
            "n": len(mine),
            "precision": _share(sum(j.task == task for j in called), len(called)),
            "recall": _share(sum(j.detection.task == task for j in mine), len(mine)),
            "missed": _share(sum(task not in p for p in plausible), len(mine)),
            "abstained": _share(sum(j.detection.confidence < threshold for j in mine), len(mine)),
            "served_fast": _share(sum(p <= fast_allows for p in plausible), len(mine)),
            "allowed_fast": task in fast_allows,
        }
    refused = [j for j in judged if j.task not in fast_allows]
    allowed = [j for j in judged if j.task in fast_allows]
    return {
        "threshold": threshold, "floor": floor, "fast_allows": sorted(fast_allows), "tasks": rows,
        "leak_rate": _share(sum(j.detection.plausible(threshold, floor) <= fast_allows for j in refused), len(refused)),
        "abstention_cost": _share(sum(not j.detection.plausible(threshold, floor) <= fast_allows for j in allowed), len(allowed)),
        "worst_miss_rate": max((r["missed"] for r in rows.values() if r["missed"] is not None), default=None),
    }


def confusions(judged: Iterable[Judged]) -> dict[str, dict[str, int]]:
    """label -> detected task -> count, the errors only."""
    table: dict[str, dict[str, int]] = {}
    for j in judged:
        if j.detection.task != j.task:
            row = table.setdefault(j.task, {})
            row[j.detection.task] = row.get(j.detection.task, 0) + 1
    return table


def judge_all(detect: Any, samples: Iterable[Any]) -> list[Judged]:
    """``detect(messages) -> Detection`` over samples with ``task`` and ``messages``."""
    return [Judged(s.task, detect(s.messages)) for s in samples]


def summary(report: Mapping[str, Any]) -> str:
    lines = [f"threshold {report['threshold']:.2f} floor {report['floor']:.3f}: leak {report['leak_rate']:.4f}  "
             f"abstention cost {report['abstention_cost']:.4f}  worst miss {report['worst_miss_rate']:.4f}"]
    for task, row in report["tasks"].items():
        lines.append(f"  {task:<13} n {row['n']:>5}  P {row['precision'] or 0:.3f}  R {row['recall'] or 0:.3f}  "
                     f"missed {row['missed'] or 0:.3f}  abstained {row['abstained'] or 0:.3f}  "
                     f"fast {row['served_fast'] or 0:.3f}")
    return "\n".join(lines)
