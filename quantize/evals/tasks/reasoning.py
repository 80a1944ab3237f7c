"""reasoning: arithmetic and short word problems with exact integer answers; the answer's
final number (after "Answer:" when given) must equal it."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from quantize.evals.checking.answers import final_number, format_number, message_text
from quantize.evals.items import EvalItem, ModelAnswer, Verdict, verdict
from quantize.evals.task import chat_request, item_rng

INSTRUCTION = "Solve the problem. End your answer with a line of the form 'Answer: <number>'."
NAMES = ("Maria", "Tom", "Aisha", "Kenji", "Lena", "Omar", "Priya", "Lucas", "Sofia", "Noah")

Problem = tuple[str, int]


def _precedence(rng: random.Random) -> Problem:
    a, b, c = rng.randint(2, 50), rng.randint(2, 12), rng.randint(2, 12)
    return f"What is {a} + {b} * {c}?", a + b * c


def _parentheses(rng: random.Random) -> Problem:
    a, b, c = rng.randint(20, 90), rng.randint(1, 19), rng.randint(2, 9)
    return f"What is ({a} - {b}) * {c}?", (a - b) * c


def _change(rng: random.Random) -> Problem:
    price, count = rng.randint(2, 9), rng.randint(2, 8)
    bill = next(b for b in (20, 50, 100) if b > price * count)
    name = rng.choice(NAMES)
    return (f"A shop sells pens at {price} dollars each. {name} buys {count} pens and pays with a {bill}-dollar "
            f"bill. How many dollars of change does {name} get?", bill - price * count)


def _distance(rng: random.Random) -> Problem:
    speed, hours = rng.randint(4, 12) * 10, rng.randint(2, 6)
    return f"A train travels at {speed} km/h for {hours} hours. How many km does it travel?", speed * hours


def _apples(rng: random.Random) -> Problem:
    start, given, bought = rng.randint(10, 40), rng.randint(1, 9), rng.randint(2, 15)
    name = rng.choice(NAMES)
    return (f"{name} has {start} apples, gives {given} to a friend and then buys {bought} more. "
            f"How many apples does {name} have now?", start - given + bought)


def _boxes(rng: random.Random) -> Problem:
    size, eggs = rng.randint(6, 12), rng.randint(20, 150)
    return f"A box holds {size} eggs. How many boxes are needed to pack {eggs} eggs?", -(-eggs // size)


def _percent(rng: random.Random) -> Problem:
    students, percent = rng.randint(2, 20) * 20, rng.randint(1, 19) * 5
    return (f"A school has {students} students and {percent}% of them walk to school. "
            f"How many students walk to school?", students * percent // 100)


def _age(rng: random.Random) -> Problem:
    child, factor, years = rng.randint(3, 15), rng.randint(2, 5), rng.randint(2, 10)
    name = rng.choice(NAMES)
    return (f"{name} is {child} years old. {name}'s mother is {factor} times as old. "
            f"How old will the mother be in {years} years?", child * factor + years)


TEMPLATES: tuple[Callable[[random.Random], Problem], ...] = (
    _precedence, _parentheses, _change, _distance, _apples, _boxes, _percent, _age)


class ReasoningTask:
    name = "reasoning"
    max_tokens = 128

    def generate(self, seed: int, n: int) -> list[EvalItem]:
        items = []
        for i in range(n):
            rng = item_rng(self.name, seed, i)
            question, answer = rng.choice(TEMPLATES)(rng)
            items.append(EvalItem(f"reasoning-{seed}-{i}", self.name, chat_request(f"{question}\n{INSTRUCTION}"), answer))
        return items

    def verify(self, item: EvalItem, response: dict[str, Any]) -> Verdict:
        number = final_number(message_text(response))
        if number is None:
            return verdict(item, False, "none", "no number in the answer")
        return verdict(item, number == item.expected, format_number(number))

    def reference_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(f"Working it out step by step.\nAnswer: {item.expected}")

    def wrong_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(f"Answer: {item.expected + 1}")
