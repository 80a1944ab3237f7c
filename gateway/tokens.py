"""Counting a request's input tokens before routing.

Duet counts locally rather than asking vLLM's /tokenize: a round trip per request would cost more
than the whole routing decision, and the count only has to be good enough to check the context
window and predict prefill time. ``HfTokenCounter`` uses the model's own tokenizer.json (exact
for the text, plus a fixed chat-template allowance per message); ``ApproxTokenCounter`` assumes
~4 characters per token when no tokenizer is configured (simulated replicas, tests).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

# Chat templates wrap each message in role markers (``<|im_start|>user\n ... <|im_end|>\n``).
TEMPLATE_TOKENS_PER_MESSAGE = 5


class TokenCounter(Protocol):
    def count_text(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class ApproxTokenCounter:
    chars_per_token: float = 4.0

    def count_text(self, text: str) -> int:
        return int(len(text) / self.chars_per_token + 0.999)


class HfTokenCounter:
    """Exact counts with a Hugging Face ``tokenizer.json`` (the `tokenizers` library, no torch).

    The ids of the most recently seen texts are kept (up to ``remembered_chars`` characters of
    them): a request's messages are tokenized once for its count and reused for its prefix
    blocks, and a conversation resends its earlier messages every turn, so most of a long
    prompt's texts were tokenized before. Kept as uint32 arrays (4 bytes an id, where a list of
    ints takes ~36), which the prefix index hashes as they are (``gateway.state.prefix_blocks``)."""

    def __init__(self, path: str, remembered_chars: int = 4_000_000) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(path)
        self._remembered_chars = remembered_chars
        self._chars = 0
        self._ids: OrderedDict[str, np.ndarray] = OrderedDict()

    def count_text(self, text: str) -> int:
        return len(self.token_ids(text))

    def token_ids(self, text: str) -> np.ndarray:
        """The text's token ids, a read-only uint32 array (what the prefix index cuts into exact blocks)."""
        known = self._ids.get(text)
        if known is not None:
            self._ids.move_to_end(text)
            return known
        ids = np.array(self._tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.uint32)
        ids.flags.writeable = False
        if len(text) <= self._remembered_chars:
            self._ids[text] = ids
            self._chars += len(text)
            while self._chars > self._remembered_chars:
                forgotten, _ = self._ids.popitem(last=False)
                self._chars -= len(forgotten)
        return ids


def count_chat_tokens(counter: TokenCounter, texts: Iterable[str], messages: int, tools: str | None) -> int:
    """A chat's tokens: its messages' ``texts``, a chat template's allowance for each of its
    ``messages``, and its ``tools`` (as JSON; None: no tools)."""
    total = sum(counter.count_text(text) for text in texts)
    total += TEMPLATE_TOKENS_PER_MESSAGE * messages + 1
    if tools:
        total += counter.count_text(tools)
    return total


def count_prompt_tokens(counter: TokenCounter, prompt: str | list[Any]) -> int:
    """Completions prompts: a string, token ids (counted as given), or a batch of either — each
    prompt of a batch must fit the context on its own, so a batch counts as its longest prompt."""
    if isinstance(prompt, str):
        return counter.count_text(prompt)
    if prompt and all(isinstance(x, int) for x in prompt):
        return len(prompt)
    return max((count_prompt_tokens(counter, p) for p in prompt if isinstance(p, (str, list))), default=0)
