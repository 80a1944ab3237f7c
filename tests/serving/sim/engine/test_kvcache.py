"""Block accounting and the prefix cache."""

from __future__ import annotations

from serving.sim.engine.kvcache import KVCache


def test_grow_reserves_whole_blocks_until_full() -> None:
    cache = KVCache(total_tokens=64, block_size=16)
    held = cache.grow(0, 17)
    assert held == 2 and cache.usage == 0.5
    assert cache.grow(held, 40) == 3
    assert cache.grow(3, 80) is None and cache.used_blocks == 3  # nothing reserved on failure
    cache.release(3)
    assert cache.usage == 0.0


def test_prefix_hits_are_leading_blocks_and_lru_bounded() -> None:
    cache = KVCache(total_tokens=48, block_size=16)  # 3 blocks
    cache.remember((1, 2, 3))
    assert cache.cached_prefix_blocks((1, 2, 9)) == 2
    assert cache.cached_prefix_blocks((9, 1)) == 0
    cache.remember((4,))  # evicts the least recently used: 3
    assert cache.cached_prefix_blocks((1, 2, 3)) == 2
