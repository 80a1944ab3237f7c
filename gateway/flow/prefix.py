"""A request's prompt as the prefix index sees it: its leading blocks' chained ids, and what the
index believes each replica holds of them.

The prompt is read the way it reaches the model (its view's ``parts``,
``gateway.endpoints.prompt``): tools, then each message's role and text in order, so that turn
n+1 of a conversation starts with turn n's prompt. With the model's real tokenizer the blocks
are exact token blocks; without one they are cut from the text's bytes (approximate: the
gateway's blocks then fall near, not on, vLLM's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gateway.endpoints import CompletionBody, PromptView, RequestBody
from gateway.state.prefix_blocks import text_block_ids, token_block_ids
from gateway.tokens import HfTokenCounter, TokenCounter


@dataclass(frozen=True, slots=True)
class PromptPrefix:
    """A prompt's chained block ids, ``block_tokens`` tokens each."""

    blocks: tuple[int, ...]
    block_tokens: int


def prompt_blocks(body: RequestBody, prompt: PromptView, counter: TokenCounter, block_tokens: int) -> tuple[int, ...]:
    """The prompt's chained block ids, cut from ``prompt.parts`` (the body's prompt view): token
    blocks with a real tokenizer, text blocks without. A completions prompt given as token ids
    is cut as given."""
    if isinstance(body, CompletionBody) and isinstance(body.prompt, list):
        tokens = body.prompt
        return token_block_ids(tokens, block_tokens) if all(isinstance(t, int) for t in tokens) else ()
    if isinstance(counter, HfTokenCounter):
        # Each text tokenized alone (as the count does, and remembered by the counter) and the
        # ids joined: a text's ids do not depend on what follows it, so turn n+1 repeats turn n's.
        parts = [counter.token_ids(part) for part in prompt.parts]
        return token_block_ids(np.concatenate(parts) if parts else np.empty(0, np.uint32), block_tokens)
    return text_block_ids("\n".join(prompt.parts), block_tokens)
