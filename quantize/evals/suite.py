"""The suite: which task types exist, and the items of a run (per task type, seeded), with a
hash that names exactly what was asked."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from quantize.errors import SuiteError
from quantize.evals.checking.sandbox import Sandbox
from quantize.evals.items import EvalItem
from quantize.evals.task import TaskType
from quantize.evals.tasks.agent import AgentTask
from quantize.evals.tasks.chat import ChatTask
from quantize.evals.tasks.coding import CodingTask
from quantize.evals.tasks.extraction import ExtractionTask
from quantize.evals.tasks.long_context import LongContextTask
from quantize.evals.tasks.reasoning import ReasoningTask

SUITES = ("default",)
TASK_NAMES = ("chat", "coding", "extraction", "agent", "long-context", "reasoning")
MAX_SAMPLES = 10_000


def task_types(sandbox: Sandbox | None = None) -> dict[str, TaskType]:
    """Every task type of the default suite, by its gateway name."""
    tasks: list[TaskType] = [ChatTask(), CodingTask(sandbox), ExtractionTask(), AgentTask(), LongContextTask(),
                             ReasoningTask()]
    return {t.name: t for t in tasks}


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    seed: int
    samples: int
    items: dict[str, tuple[EvalItem, ...]]  # task -> items

    def sha256(self) -> str:
        """Hash of every request and expected answer, in order: two runs with the same hash asked
        the same questions."""
        digest = hashlib.sha256()
        for task in sorted(self.items):
            for item in self.items[task]:
                digest.update(json.dumps([item.id, item.request, item.expected], sort_keys=True, default=str).encode())
        return digest.hexdigest()


def build_suite(name: str = "default", *, seed: int = 0, samples: int = 100, tasks: Sequence[str] | None = None,
                types: dict[str, TaskType] | None = None) -> Suite:
    """``samples`` items of each wanted task type; raises ``SuiteError`` for bad input."""
    if name not in SUITES:
        raise SuiteError(f"unknown suite '{name}' (known: {', '.join(SUITES)})")
    if not 1 <= samples <= MAX_SAMPLES:
        raise SuiteError(f"samples must be between 1 and {MAX_SAMPLES}, got {samples}")
    wanted = list(tasks) if tasks else list(TASK_NAMES)
    unknown = [t for t in wanted if t not in TASK_NAMES]
    if unknown:
        raise SuiteError(f"unknown task type(s) {', '.join(unknown)} (known: {', '.join(TASK_NAMES)})")
    types = types or task_types()
    return Suite(name, seed, samples, {t: tuple(types[t].generate(seed, samples)) for t in dict.fromkeys(wanted)})
