"""Prompt text synthesised to a token count, since the traces carry counts and no text.

Without a tokenizer the count is approximate: ~4 characters per token, the rule both the gateway
(``gateway.tokens.ApproxTokenCounter``) and the simulator (``serving.sim.tokens``) count by, so the
prompt a replica sees has the trace's length to within the chat template's few tokens. With a
Hugging Face ``tokenizer.json`` (``--duet-tokenizer``) the text is cut at exactly N tokens of the
model's own tokenizer. Every prompt starts with different words (seeded per request), so a
replica's prefix cache does not turn the trace's prompts into hits they never were.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gateway.flow import ApproxTokenCounter, HfTokenCounter, TokenCounter

Style = Literal["code", "prose"]

_PROSE = (
    "the", "system", "report", "customer", "order", "shipping", "delay", "question", "answer", "data",
    "we", "should", "consider", "whether", "policy", "changes", "after", "review", "of", "meeting",
    "notes", "please", "summarize", "main", "points", "and", "list", "next", "steps", "for", "team",
    "budget", "quarter", "results", "improved", "because", "new", "process", "reduced", "errors",
)
_CODE = (
    "def", "return", "self", "if", "else:", "for", "in", "range(n):", "items", "value", "=", "+=",
    "None", "import", "from", "class", "Parser:", "result.append(x)", "len(items)", "while", "True:",
    "raise", "ValueError(msg)", "try:", "except", "KeyError:", "config[key]", "(a, b)", "->", "int:",
)


@dataclass(frozen=True, slots=True)
class PromptSynthesizer:
    """Makes text of ``tokens`` tokens. ``cut(text, n)`` keeps the first n tokens of ``text``;
    ``counter`` counts (used to check the cut)."""

    counter: TokenCounter
    cut: Callable[[str, int], str]
    chars_per_token: float = 4.0

    def text(self, tokens: int, style: Style, seed: int) -> str:
        """About ``tokens`` tokens of ``style`` words in a seeded order (exact with a tokenizer)."""
        rng = random.Random(seed)
        words = _CODE if style == "code" else _PROSE
        # Draw more words than needed (words average ~5 chars + a space), then cut to size.
        needed = int(tokens * self.chars_per_token / 4) + 16
        draft = " ".join(rng.choices(words, k=needed))
        return self.cut(f"[{seed}] {draft}", tokens)


def _approx_cut(chars_per_token: float) -> Callable[[str, int], str]:
    def cut(text: str, tokens: int) -> str:
        return text[: max(1, int(tokens * chars_per_token))]

    return cut


def _tokenizer_cut(path: str) -> Callable[[str, int], str]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(path)

    def cut(text: str, tokens: int) -> str:
        ids = tokenizer.encode(text, add_special_tokens=False).ids[: max(1, tokens)]
        return str(tokenizer.decode(ids))

    return cut


def synthesizer(tokenizer_path: str | None = None) -> PromptSynthesizer:
    """Exact with a ``tokenizer.json`` path; otherwise the ~4 chars/token approximation."""
    if tokenizer_path:
        return PromptSynthesizer(HfTokenCounter(tokenizer_path), _tokenizer_cut(tokenizer_path))
    counter = ApproxTokenCounter()
    return PromptSynthesizer(counter, _approx_cut(counter.chars_per_token), counter.chars_per_token)
