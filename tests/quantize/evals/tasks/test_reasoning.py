"""reasoning: the final number is read, with thousands separators."""

from __future__ import annotations

import dataclasses

import pytest

from quantize.evals.tasks.reasoning import ReasoningTask
from tests.quantize.evals.completions import text


@pytest.mark.parametrize(("answer", "correct"), [
    ("Step one gives 3, so\nAnswer: {x}", True),
    ("The total is {x}.", True),
    ("Answer: {x}.0", True),
    ("answer is **{x}**", True),
    ("Answer: {x}, not 7", True),
    ("I think it is {x} or 3", False),
    ("No idea.", False),
])
def test_reasoning_reads_the_final_number(answer: str, correct: bool) -> None:
    kind = ReasoningTask()
    item = next(i for i in kind.generate(0, 50) if i.expected not in (3, 7))
    assert kind.verify(item, text(answer.format(x=item.expected))).correct is correct


def test_reasoning_thousands_separator() -> None:
    kind = ReasoningTask()
    item = dataclasses.replace(kind.generate(0, 1)[0], expected=12345)
    assert kind.verify(item, text("That makes 12,345 in all.\nAnswer: 12,345")).correct

