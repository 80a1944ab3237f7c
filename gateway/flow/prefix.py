"""A request's prompt as the prefix index sees it: its leading blocks' chained ids, and what the
index believes each replica holds of them.

The prompt is read the way it reaches the model: tools, then each message's role and text in
order, so that turn n+1 of a conversation starts with turn n's prompt. With the model's real
tokenizer the blocks are exact token blocks; without one they are cut from the text's bytes
(approximate: the gateway's blocks then fall near, not on, vLLM's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import orjson

from gateway.flow.body import ChatBody, CompletionBody, MessagesBody, RequestBody
from gateway.state.prefix_blocks import text_block_ids, token_block_ids
from gateway.tokens import HfTokenCounter, TokenCounter, message_texts


@dataclass(frozen=True, slots=True)
class PromptPrefix:
    """A prompt's chained block ids, ``block_tokens`` tokens each."""

    blocks: tuple[int, ...]
    block_tokens: int


def prompt_text(body: RequestBody) -> str:
    """The prompt's text in the order the model reads it ("" for a body without one)."""
    return "\n".join(prompt_parts(body))


def prompt_parts(body: RequestBody) -> list[str]:
    """The prompt's texts in the order the model reads them: tools, system, each message's role
    and text (the same texts the token count reads, so a tokenizer's ids are reused)."""
    if isinstance(body, CompletionBody):
        return [body.prompt] if isinstance(body.prompt, str) else []
    if not isinstance(body, ChatBody):
        return []
    parts = []
    if body.tools:
        parts.append(orjson.dumps(body.tools).decode())
    if isinstance(body, MessagesBody) and isinstance(body.system, str):
        parts.append(body.system)
    for message in body.messages:
        parts.append(str(message.get("role", "")))
        content = message.get("content")
        if isinstance(content, str) and not message.get("tool_calls"):
            parts.append(content)  # the common case, without a generator per message
        else:
            parts.extend(message_texts([message]))
    return parts


def prompt_blocks(body: RequestBody, counter: TokenCounter, block_tokens: int) -> tuple[int, ...]:
    """The prompt's chained block ids: token blocks with a real tokenizer, text blocks without.
    A completions prompt given as token ids is cut as given."""
    if isinstance(body, CompletionBody) and isinstance(body.prompt, list):
        tokens = body.prompt
        return token_block_ids(tokens, block_tokens) if all(isinstance(t, int) for t in tokens) else ()
    if isinstance(counter, HfTokenCounter):
        # Each text tokenized alone (as the count does, and remembered by the counter) and the
        # ids joined: a text's ids do not depend on what follows it, so turn n+1 repeats turn n's.
        parts = [counter.token_ids(part) for part in prompt_parts(body)]
        return token_block_ids(np.concatenate(parts) if parts else np.empty(0, np.uint32), block_tokens)
    return text_block_ids(prompt_text(body), block_tokens)
