"""What the task detector answers on prompts it never trained on, for replays whose requests name
no task: most clients never send ``x-duet-task``, and a trace has no prompt text to detect.

``UnseenDetections`` holds, per task, real prompts' detections by the shipped recipe trained
*without* each prompt's source (leave-one-source-out over the public sources the detector trains
on; written by ``python -m loadtests.benchmarks.router.unseen_detections`` into
``data/unseen_detections.json``). A replayed request of task T that names none is given one of
T's detections, a source of T drawn first (each source alike, as the detector's goals weigh
them) and then one of its prompts; the policy's own threshold and floor then make of it what
the gateway makes of the real detector's answer. So the router sees the detector's measured
errors and abstentions on unseen prompts, never the request's true task."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.flow import Detection, DuetConfig

DETECTIONS_FILE = Path(__file__).resolve().parent / "data" / "unseen_detections.json"
# The prompt a replayed request carries when it names no task: the draw, for ``DrawnDetector``.
_MARK = "duet-replay-unnamed"


@dataclass(frozen=True, slots=True)
class UnseenDetections:
    """Per task: per source, its prompts' probability rows over ``tasks``."""

    tasks: tuple[str, ...]
    by_task: Mapping[str, Mapping[str, tuple[tuple[float, ...], ...]]]

    @classmethod
    def load(cls, path: Path = DETECTIONS_FILE) -> UnseenDetections:
        document = json.loads(path.read_text(encoding="utf-8"))
        return cls.of(document)

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> UnseenDetections:
        tasks = tuple(document["tasks"])
        by_task = {task: {source: tuple(tuple(float(p) for p in row) for row in rows)
                          for source, rows in sources.items() if rows}
                   for task, sources in document["detections"].items()}
        for task, sources in by_task.items():
            for source, rows in sources.items():
                if any(len(row) != len(tasks) for row in rows):
                    raise ValueError(f"detections.{task}.{source}: every row needs {len(tasks)} probabilities")
        return cls(tasks, {task: sources for task, sources in by_task.items() if sources})

    def knows(self, task: str) -> bool:
        return task in self.by_task

    def draw(self, task: str, source_draw: float, prompt_draw: float) -> Detection:
        """One of ``task``'s detections: the source at ``source_draw`` (in [0, 1)), then its prompt
        at ``prompt_draw``. Raises KeyError for a task with none (``knows``)."""
        sources = self.by_task[task]
        names = sorted(sources)
        rows = sources[names[min(int(source_draw * len(names)), len(names) - 1)]]
        row = rows[min(int(prompt_draw * len(rows)), len(rows) - 1)]
        return Detection(dict(zip(self.tasks, row, strict=True)))


def unnamed_prompt(task: str, source_draw: float, prompt_draw: float) -> str:
    """The prompt text a replayed request that names no task carries: its draw, for
    ``DrawnDetector`` to answer (the prompt's length is the request's token count, not this)."""
    return f"{_MARK} {task} {source_draw!r} {prompt_draw!r}"


class DrawnDetector:
    """A ``Detector`` for replays: answers a request's ``unnamed_prompt`` with the detection it
    draws from ``UnseenDetections``; its threshold and floor are the replayed policy's."""

    def __init__(self, detections: UnseenDetections) -> None:
        self._detections = detections
        self.tasks = detections.tasks
        self.meta: dict[str, Any] = {}

    def detect_prompt(self, prompt: str) -> Detection:
        mark, task, source_draw, prompt_draw = prompt.split()
        if mark != _MARK:
            raise ValueError(f"not a replayed request's prompt: {prompt[:60]!r}")
        return self._detections.draw(task, float(source_draw), float(prompt_draw))

    def detect_messages(self, messages: Sequence[Any]) -> Detection:
        raise ValueError("a replay sends completions: DrawnDetector reads prompts only")


@functools.cache
def _shipped() -> UnseenDetections:
    """The shipped file, read once per process (a sweep replays hundreds of times)."""
    return UnseenDetections.load()


def unnamed(share: float, keyed: Iterable[str] = ()) -> dict[str, Any]:
    """``ReplaySettings``' fields for a replay where ``share`` of the requests name no task, their
    detections drawn from the shipped file, and those of the tasks in ``keyed`` come on an API
    key that names their task (their application's: ``ApiKey.tasks``). Raises ValueError for a
    share outside [0, 1], or keyed tasks with no unnamed requests to key."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"--unnamed-share {share:g}: a share of the requests, in [0, 1]")
    keyed = frozenset(keyed)
    if keyed and not share:
        raise ValueError("--keyed-tasks names the task of requests that name none: it needs --unnamed-share")
    return {"unnamed_share": share, "detections": _shipped() if share else None, "keyed_tasks": keyed}


def detecting_drawn(config: DuetConfig, unnamed_share: float, detections: UnseenDetections | None) -> DuetConfig:
    """``config`` whose task detector answers a replay's unnamed requests with their drawn
    detections (``DrawnDetector``), its threshold and floor as configured; unchanged when every
    request names its task or the policy detects nothing (then its rules and default decide)."""
    detection = config.policy.detection
    if not unnamed_share or detection is None:
        return config
    if detections is None:
        raise ValueError("unnamed_share needs detections (UnseenDetections.load())")
    drawn = dataclasses.replace(detection, detector=DrawnDetector(detections))
    return dataclasses.replace(config, policy=dataclasses.replace(config.policy, detection=drawn))
