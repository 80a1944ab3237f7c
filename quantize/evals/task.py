"""What every task type provides: seeded generation, verification, and (for tests and the
simulator's scripts) a correct and a wrong answer to each of its items."""

from __future__ import annotations

import random
from typing import Any, Protocol

from quantize.evals.items import EvalItem, ModelAnswer, Verdict


class TaskType(Protocol):
    name: str
    max_tokens: int  # the answer budget the runner asks for (greedy decoding)

    def generate(self, seed: int, n: int) -> list[EvalItem]:
        """``n`` items; the same seed gives the same items, and the first k of n are the k items
        of ``generate(seed, k)``."""
        ...

    def verify(self, item: EvalItem, response: dict[str, Any]) -> Verdict:
        """Score one OpenAI chat completion for ``item``."""
        ...

    def reference_answer(self, item: EvalItem) -> ModelAnswer:
        """An answer that ``verify`` accepts."""
        ...

    def wrong_answer(self, item: EvalItem) -> ModelAnswer:
        """An answer that ``verify`` rejects."""
        ...


def item_rng(task: str, seed: int, index: int) -> random.Random:
    """The generator of one item: independent of how many items are drawn."""
    return random.Random(f"duet-evals/{task}/{seed}/{index}")


def chat_request(user: str, system: str | None = None, **extra: Any) -> dict[str, Any]:
    """A chat body without ``model``, ``temperature`` and ``max_tokens`` (the runner sets them)."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return {"messages": messages, **extra}
