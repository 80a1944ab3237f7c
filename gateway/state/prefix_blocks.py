"""A prompt's leading blocks as chained ids, after vLLM's prefix cache: a block id names the whole
prompt up to the block's end (the hash runs on from the previous block's), so two prompts share
a block id exactly when they share everything up to it, and the longest run of ids a replica holds
is the prefix it has cached. Only full blocks count: vLLM caches no partial block.

Ids are a running CRC-32 and Adler-32 of the prompt's bytes (64 bits together): deterministic
across processes, so gateways sharing an index through Redis name blocks alike (Python's
``hash`` is salted per process), and ``zlib`` hashes tens of kilobytes in microseconds.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Sequence

# ~4 bytes of UTF-8 text per token (gateway.tokens.ApproxTokenCounter's ratio, for English and code).
APPROX_BYTES_PER_TOKEN = 4


def block_ids(data: bytes, block_bytes: int) -> tuple[int, ...]:
    """Chained ids of ``data``'s full ``block_bytes``-byte blocks, first block first."""
    view = memoryview(data)
    crc, adler = 0, 1
    ids = []
    for start in range(0, len(data) - block_bytes + 1, block_bytes):
        chunk = view[start:start + block_bytes]
        crc, adler = zlib.crc32(chunk, crc), zlib.adler32(chunk, adler)
        ids.append(crc << 32 | adler)
    return tuple(ids)


def token_block_ids(tokens: Sequence[int], block_tokens: int) -> tuple[int, ...]:
    """Exact blocks: the prompt's token ids (a real tokenizer's) cut every ``block_tokens``."""
    return block_ids(array("q", tokens).tobytes(), block_tokens * 8)


def text_block_ids(text: str, block_tokens: int) -> tuple[int, ...]:
    """Approximate blocks without a tokenizer: the prompt's text cut every ``block_tokens`` x 4
    bytes (llm-d's approximate prefix scorer cuts characters the same way)."""
    return block_ids(text.encode(), block_tokens * APPROX_BYTES_PER_TOKEN)
