"""The suite's vocabulary: an evaluation item, the answer a model gives to it, and a verdict.

An item is generated from a template and a seed; its ``request`` is an OpenAI chat body without
``model`` (the runner adds the model, ``temperature: 0`` and the task's ``max_tokens``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One verifiable question. ``expected`` is what the task's verifier compares against (a
    number, a code, a tool call, the unit tests of a function; for chat, the reference text)."""

    id: str
    task: str
    request: dict[str, Any]
    expected: Any

    def last_user_message(self) -> str:
        """The text the simulator's scripted answers match on."""
        users = [m for m in self.request["messages"] if m.get("role") == "user"]
        return str(users[-1]["content"]) if users else ""


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """What a model says: text, or a call of ``tool_name`` with ``tool_arguments``."""

    text: str = ""
    tool_name: str | None = None
    tool_arguments: dict[str, Any] | None = None

    def as_completion(self) -> dict[str, Any]:
        """The answer as a non-streamed OpenAI chat completion (what verifiers read)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_name is not None:
            arguments = json.dumps(self.tool_arguments or {})
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call-0", "type": "function", "function": {"name": self.tool_name, "arguments": arguments}}]}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


@dataclass(frozen=True, slots=True)
class Verdict:
    """How one answer scored. ``answer`` is its normalised form (the number, the code, the
    call), compared across endpoints for the same-answer rate; ``score`` is in [0, 1]."""

    item_id: str
    task: str
    correct: bool
    score: float
    answer: str
    detail: str = ""


def verdict(item: EvalItem, correct: bool, answer: str, detail: str = "", score: float | None = None) -> Verdict:
    """A verdict for ``item``; the score defaults to 1 when correct, else 0."""
    return Verdict(item.id, item.task, correct, float(correct) if score is None else score, answer, detail)
