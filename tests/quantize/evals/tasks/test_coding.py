"""coding: bare code and other fences, a loop stopped, the prompt's signature and examples."""

from __future__ import annotations

from quantize.evals.checking.sandbox import Limits, Sandbox
from quantize.evals.suite import task_types
from quantize.evals.tasks.coding import CodingTask
from tests.quantize.evals.completions import text

TYPES = task_types(Sandbox(Limits(wall_s=5.0, cpu_s=2)))


def test_coding_accepts_bare_code_and_other_fences() -> None:
    kind = TYPES["coding"]
    item = kind.generate(0, 1)[0]
    reference = item.expected["reference"]
    assert kind.verify(item, text(reference)).correct
    assert kind.verify(item, text(f"Here you go:\n```\n{reference}```\nDone.")).correct


def test_coding_answer_that_loops_is_wrong_not_stuck() -> None:
    kind = CodingTask(Sandbox(Limits(wall_s=3.0, cpu_s=1)))
    item = kind.generate(0, 1)[0]
    verdict = kind.verify(item, text(f"```python\ndef {item.expected['function']}(*a):\n    while True: pass\n```"))
    assert not verdict.correct and verdict.answer.startswith("timeout")


def test_coding_prompt_shows_the_signature_and_examples() -> None:
    item = TYPES["coding"].generate(0, 1)[0]
    prompt = item.last_user_message()
    assert item.expected["function"] in prompt and "Examples:" in prompt and "```python" in prompt
    assert len(item.expected["tests"]) == 6

