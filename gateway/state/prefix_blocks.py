"""A prompt's leading blocks as chained ids, after vLLM's prefix cache: a block id names the whole
prompt up to the block's end (the hash runs on from the previous block's), so two prompts share
a block id exactly when they share everything up to it, and the longest run of ids a replica holds
is the prefix it has cached. Only full blocks count: vLLM caches no partial block.

Ids are the running CRC-32 of the prompt's bytes at each block's end: deterministic across
processes, so gateways sharing an index through Redis name blocks alike (Python's ``hash`` of
bytes is salted per process). 32 bits are enough for a belief: with a full index (31,250 blocks
a replica) a cold prompt's first block matches by chance once in ~140,000 look-ups. One C call
per block is the cost that matters (an 8k-token prompt is 32 blocks of 256 tokens): a second
hash (Adler-32) for 64-bit ids cost as much again, and hashing blocks independently in C and
chaining them afterwards measured slower (``loadtests/prefix_bench.py``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

_NON_NEGATIVE = (1 << 63) - 1
# ~4 bytes of UTF-8 text per token (gateway.tokens.ApproxTokenCounter's ratio, for English and code).
APPROX_BYTES_PER_TOKEN = 4


def block_ids(data: bytes, block_bytes: int) -> tuple[int, ...]:
    """Chained ids of ``data``'s full ``block_bytes``-byte blocks, first block first."""
    view = memoryview(data)
    crc = 0
    ids = []
    for start in range(0, len(data) - block_bytes + 1, block_bytes):
        crc = zlib.crc32(view[start:start + block_bytes], crc)
        ids.append(crc)
    return tuple(ids)


def token_block_ids(tokens: Sequence[int], block_tokens: int) -> tuple[int, ...]:
    """Exact blocks: the prompt's token ids (a real tokenizer's) cut every ``block_tokens``.
    Python's hash of a tuple of ints is not salted (only str and bytes hashes are), so these are
    the same in every gateway process; hashing tuples measured 2.5x faster than packing the ids
    into bytes for CRC-32 (the conversion of each int dominated). Kept to 63 bits (non-negative)."""
    tokens = list(tokens)
    ids = []
    chained = 0
    for start in range(0, len(tokens) - block_tokens + 1, block_tokens):
        chained = hash((chained, tuple(tokens[start:start + block_tokens]))) & _NON_NEGATIVE
        ids.append(chained)
    return tuple(ids)


def text_block_ids(text: str, block_tokens: int) -> tuple[int, ...]:
    """Approximate blocks without a tokenizer: the prompt's text cut every ``block_tokens`` x 4
    bytes (llm-d's approximate prefix scorer cuts characters the same way)."""
    return block_ids(text.encode(), block_tokens * APPROX_BYTES_PER_TOKEN)
