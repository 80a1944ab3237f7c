"""Answer scripts for the simulator (``duet sim --answers``) from a suite: every item answered
correctly, except the task types named ``wrong``. A parity run between two simulators scripted
this way has known verdicts (tests/integration/test_parity_sim.py)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from quantize.evals.items import EvalItem
from quantize.evals.task import TaskType


def answer_rules(items: Iterable[EvalItem], types: dict[str, TaskType], wrong: Collection[str] = ()) -> list[dict[str, Any]]:
    """One ``equals`` rule per item (its last user message), answering its reference answer, or
    its wrong answer when the item's task is in ``wrong``."""
    rules = []
    for item in items:
        task = types[item.task]
        answer = task.wrong_answer(item) if item.task in wrong else task.reference_answer(item)
        rule: dict[str, Any] = {"equals": item.last_user_message()}
        if answer.tool_name is not None:
            rule["tool_call"] = {"name": answer.tool_name, "arguments": answer.tool_arguments or {}}
        else:
            rule["text"] = answer.text
        rules.append(rule)
    return rules
