"""A request's prompt as the lifecycle reads it, read from its body once per request: the token
count, the task's rules and the prefix blocks all read this view, never the messages again.

    texts     each message's text parts, in order (string contents, ``{"type": "text"}`` parts,
              tool calls as JSON): what the token count and the has_code rule read
    parts     the prompt in the order the model reads it (tools, system, then each message's
              role and texts): what the prefix blocks are cut from
    messages  how many messages (the chat template's allowance is per message)
    tools     the tools as JSON, once (None: no tools)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class PromptView:
    texts: tuple[str, ...]
    parts: tuple[str, ...]
    messages: int = 0
    tools: str | None = None


NO_PROMPT = PromptView((), ())


def message_texts(messages: Iterable[Any]) -> Iterable[str]:
    """The text parts of chat messages (string contents and ``{"type": "text"}`` parts, tool calls)."""
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    yield part["text"]
        if message.get("tool_calls"):
            yield orjson.dumps(message["tool_calls"]).decode()


def chat_view(messages: list[dict[str, Any]], tools: list[Any] | None, system: str | None = None) -> PromptView:
    """A chat's prompt: ``messages`` walked once; ``system`` is a system prompt given apart from
    them (Anthropic's), read by the prefix blocks only."""
    tools_json = orjson.dumps(tools).decode() if tools else None
    texts: list[str] = []
    parts: list[str] = [] if tools_json is None else [tools_json]
    if system is not None:
        parts.append(system)
    for message in messages:
        parts.append(str(message.get("role", "")))
        content = message.get("content")
        if isinstance(content, str) and not message.get("tool_calls"):
            texts.append(content)  # the common case, without a generator per message
            parts.append(content)
        else:
            own = list(message_texts((message,)))
            texts.extend(own)
            parts.extend(own)
    return PromptView(tuple(texts), tuple(parts), len(messages), tools_json)


def prompt_view(prompt: str | list[Any], *, cut: bool = True) -> PromptView:
    """A completions-style prompt (a string, token ids, or a batch): its strings are its texts;
    a single string is also what the prefix blocks are cut from (``cut``: this API's prompt is)."""
    texts = (prompt,) if isinstance(prompt, str) else tuple(p for p in prompt if isinstance(p, str))
    return PromptView(texts, (prompt,) if cut and isinstance(prompt, str) else ())
