"""The calibration set: short chats, code, extraction and arithmetic, generated from a seed.

GPTQ and SmoothQuant only need activations that look like the traffic the variant will serve, so
a few hundred short conversations of the gateway's task types are enough. Every text is made here
from templates written for Duet (no third-party data set, nothing to license), and the same seed
always makes the same file: ``python -m quantize.calibration.generate`` rewrites
``quantize/calibration/default.jsonl`` and a test checks the committed file is exactly that.

Each line is ``{"task": ..., "messages": [{"role": "user", ...}, {"role": "assistant", ...}]}``;
the build renders it with the model's own chat template.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

SEED = 7
PER_TASK = 80
DEFAULT_FILE = Path(__file__).resolve().parent / "default.jsonl"

Chat = list[dict[str, str]]

CAPITALS = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo",
    "Canada": "Ottawa", "Kenya": "Nairobi", "Peru": "Lima", "Norway": "Oslo", "Egypt": "Cairo",
    "Australia": "Canberra", "Brazil": "Brasilia", "India": "New Delhi", "Poland": "Warsaw",
    "Portugal": "Lisbon", "Greece": "Athens", "Chile": "Santiago", "Vietnam": "Hanoi",
}
EXPLANATIONS = {
    "a hash table": "A hash table stores values under keys and finds them in constant time on average "
                    "by hashing each key to a slot.",
    "photosynthesis": "Photosynthesis is how plants turn light, water and carbon dioxide into sugar "
                      "and oxygen.",
    "inflation": "Inflation is the rise of prices over time, so the same money buys less.",
    "a load balancer": "A load balancer spreads incoming requests over several servers so no single "
                       "one is overwhelmed.",
    "compound interest": "Compound interest is interest earned on both the original amount and the "
                         "interest already added.",
    "a unit test": "A unit test runs one small piece of code with known inputs and checks its output.",
    "latency": "Latency is the time between asking for something and getting the first answer.",
    "a balance sheet": "A balance sheet lists what a company owns, what it owes, and the difference, "
                       "its equity, at one date.",
    "recursion": "Recursion is a function solving a problem by calling itself on smaller parts of it.",
    "gravity": "Gravity is the attraction between masses; it keeps the planets in orbit around the Sun.",
}
CHAT_OPENERS = ("", "Quick question: ", "Please answer briefly. ", "I am curious. ")

CODE_TASKS: tuple[tuple[str, str], ...] = (
    ("returns the sum of a list of numbers", "def {f}({a}):\n    return sum({a})"),
    ("returns the largest value in a list", "def {f}({a}):\n    return max({a})"),
    ("reverses a string", "def {f}({a}):\n    return {a}[::-1]"),
    ("counts the vowels in a string",
     "def {f}({a}):\n    return sum(1 for ch in {a}.lower() if ch in 'aeiou')"),
    ("checks whether a number is even", "def {f}({a}):\n    return {a} % 2 == 0"),
    ("returns the factorial of n",
     "def {f}({a}):\n    result = 1\n    for i in range(2, {a} + 1):\n        result *= i\n    return result"),
    ("removes duplicates from a list and keeps the order",
     "def {f}({a}):\n    seen = set()\n    return [x for x in {a} if not (x in seen or seen.add(x))]"),
    ("returns the average of a list of numbers", "def {f}({a}):\n    return sum({a}) / len({a})"),
    ("checks whether a string is a palindrome",
     "def {f}({a}):\n    cleaned = {a}.replace(' ', '').lower()\n    return cleaned == cleaned[::-1]"),
    ("returns the n-th Fibonacci number",
     "def {f}({a}):\n    x, y = 0, 1\n    for _ in range({a}):\n        x, y = y, x + y\n    return x"),
    ("squares every number in a list", "def {f}({a}):\n    return [x * x for x in {a}]"),
    ("counts the words in a sentence", "def {f}({a}):\n    return len({a}.split())"),
)
FUNCTION_NAMES = ("solve", "compute", "helper", "process", "run_task", "calc")
ARGUMENT_NAMES = ("values", "items", "data", "text", "n", "xs")

COMPANIES = ("Northwind", "Bluebird Ltd", "Acme Corp", "Kestrel Foods", "Orion Metals", "Tidewater Inc")
LINE_ITEMS = ("Revenue", "Cost of sales", "Operating expenses", "Interest", "Taxes")


def chat_item(rng: random.Random) -> Chat:
    if rng.random() < 0.5:
        country = rng.choice(sorted(CAPITALS))
        question = f"{rng.choice(CHAT_OPENERS)}What is the capital of {country}?"
        answer = f"The capital of {country} is {CAPITALS[country]}."
    else:
        topic = rng.choice(sorted(EXPLANATIONS))
        question = f"{rng.choice(CHAT_OPENERS)}Explain {topic} in one sentence."
        answer = EXPLANATIONS[topic]
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def code_item(rng: random.Random) -> Chat:
    description, template = rng.choice(CODE_TASKS)
    name, argument = rng.choice(FUNCTION_NAMES), rng.choice(ARGUMENT_NAMES)
    question = f"Write a Python function `{name}` that {description}."
    answer = "```python\n" + template.format(f=name, a=argument) + "\n```"
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def extraction_item(rng: random.Random) -> Chat:
    company, year = rng.choice(COMPANIES), rng.randint(2015, 2026)
    figures = {item: rng.randint(50, 9_000) * 1_000 for item in LINE_ITEMS}
    figures["Revenue"] += sum(v for k, v in figures.items() if k != "Revenue")  # keep it profitable
    net_income = figures["Revenue"] - sum(v for k, v in figures.items() if k != "Revenue")
    statement = "\n".join(f"{item}: ${value:,}" for item, value in figures.items())
    asked = rng.choice([*LINE_ITEMS, "Net income"])
    value = net_income if asked == "Net income" else figures[asked]
    question = (f"Income statement of {company}, fiscal year {year}:\n{statement}\n\n"
                f"What is the {asked.lower()}? Answer with the number only.")
    return [{"role": "user", "content": question}, {"role": "assistant", "content": str(value)}]


def arithmetic_item(rng: random.Random) -> Chat:
    a, b = rng.randint(2, 999), rng.randint(2, 99)
    op = rng.choice("+-*")
    result = {"+": a + b, "-": a - b, "*": a * b}[op]
    if rng.random() < 0.5:
        question, answer = f"What is {a} {op} {b}?", f"{a} {op} {b} = {result}."
    else:
        question = f"A box holds {b} items. How many items are in {a} boxes?"
        answer = f"{a} boxes hold {a} * {b} = {a * b} items."
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


MAKERS: dict[str, Callable[[random.Random], Chat]] = {
    "chat": chat_item, "code": code_item, "extraction": extraction_item, "arithmetic": arithmetic_item,
}


def calibration_items(seed: int = SEED, per_task: int = PER_TASK) -> Iterator[dict[str, object]]:
    """``per_task`` items of each task type, interleaved, all drawn from one seeded generator."""
    rng = random.Random(seed)
    for _ in range(per_task):
        for task, make in MAKERS.items():
            yield {"task": task, "messages": make(rng)}


def render(seed: int = SEED, per_task: int = PER_TASK) -> str:
    """The JSON-lines text of the calibration set (what ``default.jsonl`` holds)."""
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in calibration_items(seed, per_task))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m quantize.calibration.generate", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_FILE)
    args = parser.parse_args(argv)
    args.out.write_text(render())
    print(f"{args.out}: {PER_TASK * len(MAKERS)} items")


if __name__ == "__main__":
    main()
