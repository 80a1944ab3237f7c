"""Reading an answer out of an OpenAI chat completion: its text, its tool call, its final
number, its code. Lenient on purpose: a small model's formatting should not decide parity,
only what it says."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_ANSWER_LINE = re.compile(r"answer\s*(?:is|:|=)\s*\**\s*\$?\s*(-?[\d,]*\.?\d+)", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments_text: str


def message_text(response: dict[str, Any]) -> str:
    """The first choice's content ("" when there is none)."""
    message = _message(response)
    content = message.get("content")
    return content if isinstance(content, str) else ""


def tool_call(response: dict[str, Any]) -> ToolCall | None:
    """The first choice's first tool call, if any."""
    calls = _message(response).get("tool_calls") or []
    if not calls or not isinstance(calls[0], dict):
        return None
    function = calls[0].get("function") or {}
    return ToolCall(str(function.get("name", "")), str(function.get("arguments", "")))


def final_number(text: str) -> float | None:
    """The number the text ends on: after "Answer:" when the text says so, else the last
    number in it; thousands separators are dropped."""
    marked = _ANSWER_LINE.findall(text)
    candidates = marked or _NUMBER.findall(text)
    for raw in reversed(candidates):
        try:
            return float(raw.replace(",", ""))
        except ValueError:
            continue
    return None


def first_number(text: str) -> float | None:
    """The number the text starts with (after "Answer:" when the text says so): for answers
    that are asked to be a bare number but may go on ("4,210 million in 2023")."""
    marked = _ANSWER_LINE.findall(text)
    for raw in marked or _NUMBER.findall(text):
        try:
            return float(raw.replace(",", ""))
        except ValueError:
            continue
    return None


def code_block(text: str) -> str:
    """The code of the answer: the first fenced block marked python (else the first fenced
    block; else the whole text, for a model that answers with bare code)."""
    blocks = _FENCE.findall(text)
    for language, body in blocks:
        if language.lower() in ("python", "py", "python3"):
            return str(body)
    if blocks:
        return str(blocks[0][1])
    return text


def parse_json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def format_number(value: float) -> str:
    """A number as an answer key: integers without a fraction, others to 4 decimals."""
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


def _message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices") if isinstance(response, dict) else None
    if not choices or not isinstance(choices[0], dict):
        return {}
    message = choices[0].get("message")
    return message if isinstance(message, dict) else {}
