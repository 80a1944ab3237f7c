"""An answer as the chat completion a model would send, for the tasks' tests."""

from __future__ import annotations

from quantize.evals.items import ModelAnswer


def text(answer: str) -> dict:  # type: ignore[type-arg]
    return ModelAnswer(answer).as_completion()
