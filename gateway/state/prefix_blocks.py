"""A prompt's leading blocks as chained ids, after vLLM's prefix cache: a block id names the whole
prompt up to the block's end (each id mixes the previous one with its block's hash), so two prompts
share a block id exactly when they share everything up to it, and the longest run of ids a replica
holds is the prefix it has cached. Only full blocks count: vLLM caches no partial block.

Ids are 63-bit and the same in every process, so gateways sharing an index through Redis name
blocks alike (Python's ``hash`` of str and bytes is salted per process; its hash of ints and of
tuples of ints is not). 63 bits because a false match makes the router think a cold replica warm:
with 32-bit ids (a running CRC-32, until Dec 2026) a full index (31,250 blocks on each of 16
replicas) matched a cold prompt's first block by chance once in ~8,600 requests; at 63 bits, never
in practice.

The cost that matters is an 8k-token prompt's 33 blocks on every request (issue #17: < 50 µs at p99
for the whole index). Text blocks are hashed in one vectorised pass: each block's bytes read as
little-endian 32-bit words (a text block of ``block_tokens`` tokens is ``block_tokens`` words: 4
bytes a token), their dot product with fixed random 64-bit keys, mod 2^64 (a multilinear hash:
two different blocks collide with probability at most 2^-33 whatever the text, ~2^-64 for most
differences), then chained with Python's tuple hash, one step a block. Measured on an 8k-token
prompt (``loadtests/benchmarks/router/prefix_hashing.py``): 11 µs for the hashing against 20 µs for the 32-bit CRC-32
chain it replaced, which spent half its time calling zlib once a block; a second stdlib hash for
64 bits (Adler-32, SHA-1, BLAKE2) cost 1.8x-3x.

Token ids are the same kind of words (one 32-bit word a token), hashed alike: the tokenizer's
counter keeps each text's ids as a uint32 array (``gateway.tokens.HfTokenCounter``), so a prompt's
ids are one concatenation away from the hash; a list of ids (a completions prompt given as ids) is
packed first (``array('I')``, ~60 µs for 8,192 ids: the ints' conversion is the cost).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

_NON_NEGATIVE = (1 << 63) - 1
# ~4 bytes of UTF-8 text per token (gateway.tokens.ApproxTokenCounter's ratio, for English and code).
APPROX_BYTES_PER_TOKEN = 4
_WORD = np.dtype("<u4")  # little-endian on every machine, so every gateway reads the same words
_MAX_WORD = (1 << 32) - 1
if array("I").itemsize != 4:  # C's unsigned int: 4 bytes on every platform numpy and CPython build for
    raise ImportError("gateway.state.prefix_blocks packs token ids as 32-bit words: array('I') is not 4 bytes here")


@lru_cache(maxsize=16)
def _keys(words: int) -> np.ndarray:
    """``words`` random 64-bit keys, the same in every process and numpy version (from SHAKE-256,
    not numpy's generators, whose streams may change between versions)."""
    digest = hashlib.shake_256(b"duet prefix block keys").digest(8 * words)
    keys = np.frombuffer(digest, dtype="<u8").astype(np.uint64)
    keys.flags.writeable = False
    return keys


def block_ids(data: bytes, block_bytes: int) -> tuple[int, ...]:
    """Chained ids of ``data``'s full ``block_bytes``-byte blocks, first block first
    (``block_bytes`` a multiple of 4: the bytes are read as little-endian 32-bit words)."""
    if block_bytes <= 0 or block_bytes % _WORD.itemsize:
        raise ValueError(f"block_bytes must be a positive multiple of {_WORD.itemsize}, got {block_bytes}")
    words = block_bytes // _WORD.itemsize
    return word_block_ids(np.frombuffer(data, dtype=_WORD, count=len(data) // block_bytes * words), words)


def word_block_ids(words: np.ndarray, block_words: int) -> tuple[int, ...]:
    """Chained ids of a 1-D array of 32-bit words cut every ``block_words`` (full blocks only)."""
    count = len(words) // block_words
    if not count:
        return ()
    blocks = words[:count * block_words].reshape(count, block_words)
    # uint32 @ uint64 is exact integer arithmetic mod 2^64 in any order: the same on every machine.
    hashes = (blocks @ _keys(block_words)).tolist()
    ids = []
    chained = 0
    for block in hashes:
        chained = hash((chained, block)) & _NON_NEGATIVE
        ids.append(chained)
    return tuple(ids)


def token_block_ids(tokens: Sequence[int] | np.ndarray, block_tokens: int) -> tuple[int, ...]:
    """Exact blocks: the prompt's token ids (a real tokenizer's) cut every ``block_tokens``, each
    id one word. A token id outside 0..2^32-1 is no tokenizer's: no blocks (no prefix is known)."""
    if isinstance(tokens, np.ndarray):
        if tokens.dtype != np.uint32:
            if tokens.size and (tokens.min() < 0 or tokens.max() > _MAX_WORD):
                return ()
            tokens = tokens.astype(np.uint32)
        return word_block_ids(tokens, block_tokens)
    try:
        packed = array("I", tokens)
    except (OverflowError, TypeError):
        return ()
    return word_block_ids(np.frombuffer(packed, dtype=np.uint32), block_tokens)


def text_block_ids(text: str, block_tokens: int) -> tuple[int, ...]:
    """Approximate blocks without a tokenizer: the prompt's text cut every ``block_tokens`` x 4
    bytes (llm-d's approximate prefix scorer cuts characters the same way)."""
    return block_ids(text.encode(), block_tokens * APPROX_BYTES_PER_TOKEN)
