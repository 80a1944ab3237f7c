"""A paged KV cache of finite blocks, and the prefix cache that reuses finished prompts' blocks.

Blocks held by running sequences count as used (``usage`` is vLLM's ``kv_cache_usage_perc``);
blocks of finished prompts stay reusable by hash until space is needed, like vLLM's free-block
queue that keeps cached content until the block is reallocated.
"""

from __future__ import annotations

from collections import OrderedDict


class KVCache:
    """Block accounting for ``total_blocks`` blocks of ``block_size`` tokens each."""

    __slots__ = ("block_size", "total_blocks", "used_blocks", "_cached")

    def __init__(self, total_tokens: int, block_size: int) -> None:
        self.block_size = block_size
        self.total_blocks = max(1, total_tokens // block_size)
        self.used_blocks = 0
        # Prefix cache: block hash -> None, oldest first (LRU eviction order).
        self._cached: OrderedDict[int, None] = OrderedDict()

    @property
    def free_blocks(self) -> int:
        return self.total_blocks - self.used_blocks

    @property
    def usage(self) -> float:
        """Fraction of blocks held by running sequences, in [0, 1]."""
        return self.used_blocks / self.total_blocks

    def blocks_for(self, tokens: int) -> int:
        """Blocks needed to hold ``tokens`` tokens."""
        return -(-tokens // self.block_size)

    def grow(self, held_blocks: int, tokens: int) -> int | None:
        """Reserve blocks so a sequence holding ``held_blocks`` fits ``tokens`` tokens.

        Returns the new number of blocks it holds, or ``None`` (nothing reserved) if the cache
        lacks free blocks.
        """
        needed = self.blocks_for(tokens) - held_blocks
        if needed <= 0:
            return held_blocks
        if needed > self.free_blocks:
            return None
        self.used_blocks += needed
        return held_blocks + needed

    def release(self, blocks: int) -> None:
        """Return a sequence's blocks to the free pool."""
        self.used_blocks -= blocks

    def cached_prefix_blocks(self, hashes: tuple[int, ...]) -> int:
        """How many leading blocks of a prompt are in the prefix cache (marks them recently used)."""
        hits = 0
        for block_hash in hashes:
            if block_hash not in self._cached:
                break
            self._cached.move_to_end(block_hash)
            hits += 1
        return hits

    def remember(self, hashes: tuple[int, ...]) -> None:
        """Keep a computed prompt's blocks reusable, evicting the least recently used beyond
        the cache's capacity."""
        for block_hash in hashes:
            self._cached[block_hash] = None
            self._cached.move_to_end(block_hash)
        while len(self._cached) > self.total_blocks:
            self._cached.popitem(last=False)
