"""chat: open questions. No answer is right by itself, so an answer is scored by its agreement
with a reference: the standard variant's answer to the same question (the parity runner binds
it with ``with_reference``). Agreement = token-set F1 >= ``THRESHOLD``.

Generated items carry a canned reference (so the verifier can be tested alone); a parity run
replaces it with what the standard endpoint said."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

from quantize.evals.checking.answers import message_text
from quantize.evals.checking.similarity import token_set_f1
from quantize.evals.items import EvalItem, ModelAnswer, Verdict, verdict
from quantize.evals.task import chat_request, item_rng

THRESHOLD = 0.5
TOPICS = ("photosynthesis", "compound interest", "the water cycle", "machine learning", "inflation", "vaccines",
          "black holes", "the stock market", "recycling", "cloud computing", "plate tectonics", "jet lag",
          "encryption", "the immune system", "supply and demand", "solar panels", "sleep", "bread baking",
          "version control", "electric cars")
ACTIVITIES = ("learning a new language", "running a first marathon", "saving money", "public speaking",
              "growing tomatoes", "working from home", "studying for exams", "writing a resume", "cooking rice",
              "training a puppy", "reducing screen time", "planning a trip")
PAIRS = (("a virus", "a bacterium"), ("weather", "climate"), ("a loan", "a lease"), ("RAM", "storage"),
         ("stocks", "bonds"), ("a lake", "a sea"), ("tea", "coffee"), ("a comet", "an asteroid"))

STYLES = ("", " Use a simple example.", " Keep a friendly tone.", " Write for a twelve-year-old.",
          " Avoid jargon.", " Be concise.")

Question = tuple[str, str]  # (question, canned reference)


def _explain(rng: random.Random) -> Question:
    topic = rng.choice(TOPICS)
    return (f"Explain {topic} to a beginner in two or three sentences.",
            f"{topic.capitalize()} is a basic idea that a beginner can learn step by step. In short, {topic} "
            "describes how something works and why it matters in everyday life.")


def _tips(rng: random.Random) -> Question:
    activity = rng.choice(ACTIVITIES)
    return (f"Give three short practical tips for {activity}.",
            f"Three tips for {activity}: start small and be consistent; plan your time and track progress; "
            "ask for help and learn from mistakes.")


def _compare(rng: random.Random) -> Question:
    a, b = rng.choice(PAIRS)
    return (f"What is the main difference between {a} and {b}? Answer briefly.",
            f"The main difference between {a} and {b} is what they are made of and how they behave; "
            f"{a} and {b} are often confused but differ in size, cause and use.")


TEMPLATES: tuple[Callable[[random.Random], Question], ...] = (_explain, _tips, _compare)


def with_reference(item: EvalItem, reference: str) -> EvalItem:
    """``item`` scored against ``reference`` (the standard variant's answer)."""
    return dataclasses.replace(item, expected=reference)


class ChatTask:
    name = "chat"
    max_tokens = 96

    def generate(self, seed: int, n: int) -> list[EvalItem]:
        items = []
        for i in range(n):
            rng = item_rng(self.name, seed, i)
            question, reference = rng.choice(TEMPLATES)(rng)
            items.append(EvalItem(f"chat-{seed}-{i}", self.name, chat_request(question + rng.choice(STYLES)), reference))
        return items

    def verify(self, item: EvalItem, response: dict[str, Any]) -> Verdict:
        text = message_text(response)
        f1 = token_set_f1(text, str(item.expected))
        return verdict(item, f1 >= THRESHOLD, " ".join(text.lower().split()), f"F1 {f1:.2f}", score=f1)

    def reference_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(str(item.expected))

    def wrong_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer("Sorry, I cannot help with that request today.")
