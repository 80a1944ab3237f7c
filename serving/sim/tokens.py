"""Tokens without a tokenizer: deterministic counts, ids, prefix-block hashes and output words.

Counting is by characters (about four per token, the usual ratio for English with BPE
vocabularies such as SmolLM2's and Llama 3's), so the same text always counts the same.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator, Sequence

CHARS_PER_TOKEN = 4
VOCAB_SIZE = 49152  # SmolLM2's vocabulary size; only used to make token ids look plausible

# Short word-like tokens for generated text (a leading space, as BPE tokens usually carry).
_WORDS = (
    " the", " of", " and", " to", " a", " in", " is", " that", " for", " it", " as", " with",
    " model", " data", " this", " on", " are", " be", " by", " an", " can", " from", " which",
    " value", " we", " each", " more", " time", " one", " first", " token", " result", " then",
    " when", " two", " new", " case", " also", " such", " same", " used", " will", " other",
    " system", " number", " list", " point", " set", " way", " part", " order", " test", ".", ",",
)


def count_tokens(text: str) -> int:
    """Approximate token count of ``text`` (at least 1 for non-empty text)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def token_ids(text: str) -> list[int]:
    """Deterministic pseudo token ids, one per ``CHARS_PER_TOKEN`` characters."""
    step = CHARS_PER_TOKEN
    return [zlib.crc32(text[i : i + step].encode()) % VOCAB_SIZE for i in range(0, len(text), step)]


def prefix_hashes(text: str, block_size: int) -> tuple[int, ...]:
    """Chained hashes of the full KV blocks of a prompt (``block_size`` tokens each).

    Block i's hash covers all text up to the end of block i, so prompts that share a prefix
    share their leading hashes (what vLLM's prefix cache keys on).
    """
    block_chars = block_size * CHARS_PER_TOKEN
    data = text.encode()
    hashes = []
    running = 0
    for end in range(block_chars, len(data) + 1, block_chars):
        running = zlib.crc32(data[end - block_chars : end], running)
        hashes.append(running)
    return tuple(hashes)


def chat_prompt_text(messages: Sequence[dict[str, object]]) -> str:
    """The text a chat template would render (role and content per message), for counting
    and prefix hashing."""
    parts = []
    for message in messages:
        parts.append(f"<{message.get('role', '')}>")
        parts.append(message_text(message.get("content")))
    return "\n".join(parts)


def message_text(content: object) -> str:
    """Text of a message's ``content``: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def words(seed: int) -> Iterator[str]:
    """An endless, seed-determined stream of word-like output tokens."""
    rng = random.Random(seed)
    choice, table = rng.choice, _WORDS
    while True:
        yield choice(table)


def split_text(text: str, pieces: int) -> list[str]:
    """Cut ``text`` into ``pieces`` consecutive parts of near-equal length (for streaming a
    fixed text, such as tool-call arguments, one token's worth at a time)."""
    pieces = max(1, pieces)
    size, extra = divmod(len(text), pieces)
    out, start = [], 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


def token_ids_of_length(text: str, count: int) -> list[int]:
    """``count`` pseudo token ids for ``text`` (its chunks' ids, padded for template tokens)."""
    ids = token_ids(text)[:count]
    return ids + [(1 + i) % VOCAB_SIZE for i in range(count - len(ids))]
