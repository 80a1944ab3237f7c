"""Chained block ids: equal exactly as far as two prompts are equal, full blocks only, the same
in every process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gateway.state.prefix_blocks import block_ids, text_block_ids, token_block_ids


def test_a_block_id_names_the_whole_prefix_up_to_its_end():
    a = token_block_ids(list(range(64)), 16)
    b = token_block_ids([*range(16), 999, *range(17, 64)], 16)  # differs in block 1 only
    assert len(a) == len(b) == 4
    assert a[0] == b[0]
    assert all(x != y for x, y in zip(a[1:], b[1:], strict=True))  # the difference carries on


@pytest.mark.parametrize(("tokens", "blocks"), [(0, 0), (15, 0), (16, 1), (31, 1), (32, 2), (8192, 512)])
def test_only_full_blocks_count(tokens, blocks):
    assert len(token_block_ids(list(range(tokens)), 16)) == blocks


def test_a_longer_prompt_extends_a_shorter_ones_blocks():
    turn1 = "system: you are terse\nuser: hello" * 40
    turn2 = turn1 + "\nassistant: hi\nuser: more" * 40
    short, long = text_block_ids(turn1, 16), text_block_ids(turn2, 16)
    assert len(long) > len(short) > 0
    assert long[:len(short)] == short


def test_text_blocks_are_block_tokens_times_four_bytes():
    assert len(text_block_ids("x" * 255, 16)) == 3
    assert len(text_block_ids("x" * 256, 16)) == 4
    assert text_block_ids("x" * 256, 16) == block_ids(b"x" * 256, 64)


def test_ids_are_the_same_in_another_process():
    """Gateways sharing an index through Redis must name blocks alike: Python's own str hash is
    salted per process, so this runs the hash in a fresh interpreter with a different seed."""
    code = ("from gateway.state.prefix_blocks import text_block_ids, token_block_ids; "
            "print(text_block_ids('abc' * 100, 16), token_block_ids(list(range(100)), 16))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "12345", "PATH": ""}, cwd=".")
    assert other.stdout.strip() == f"{text_block_ids('abc' * 100, 16)} {token_block_ids(list(range(100)), 16)}"


def test_ids_are_non_negative_64_bit_integers():
    ids = [*text_block_ids("z" * 4096, 16), *token_block_ids(list(range(4096)), 16)]
    assert all(0 <= i < 1 << 63 for i in ids)


def test_ids_use_all_63_bits_not_32():
    """A false match makes the router think a cold replica warm: ids carry 63 bits, not CRC-32's 32."""
    ids = [*text_block_ids("".join(chr(65 + i % 26) for i in range(64 * 64)), 16)]
    assert len(set(ids)) == len(ids) == 64
    assert sum(i >= 1 << 32 for i in ids) > 56  # 32-bit ids would all be below


@pytest.mark.parametrize("flip", [0x01, 0x80])
def test_changing_any_one_byte_changes_its_block_and_every_later_one(flip):
    data = bytes(range(256)) * 2  # 8 blocks of 64 bytes
    base = block_ids(data, 64)
    for position in range(len(data)):
        changed = bytearray(data)
        changed[position] ^= flip  # 0x80: the top bit of a byte, the top bit of a word at every 4th
        ids = block_ids(bytes(changed), 64)
        block = position // 64
        assert ids[:block] == base[:block]
        assert all(a != b for a, b in zip(ids[block:], base[block:], strict=True)), position


def test_reordered_words_in_a_block_change_its_id():
    assert block_ids(b"abcdefgh" * 8, 64) != block_ids(b"efghabcd" * 8, 64)
    assert block_ids(b"a" * 64 + b"b" * 64, 64)[1] != block_ids(b"b" * 64 + b"a" * 64, 64)[1]


@pytest.mark.parametrize("block_bytes", [0, -4, 6])
def test_block_bytes_must_be_whole_words(block_bytes):
    with pytest.raises(ValueError, match="block_bytes"):
        block_ids(b"x" * 64, block_bytes)


def test_token_ids_as_a_list_a_tuple_or_an_array_name_the_same_blocks():
    tokens = [i * 7919 % 50_000 for i in range(1000)]
    blocks = token_block_ids(tokens, 64)
    assert len(blocks) == 15
    assert blocks == token_block_ids(tuple(tokens), 64) == token_block_ids(iter(tokens), 64)
    assert blocks == token_block_ids(np.array(tokens, dtype=np.uint32), 64)  # the tokenizer counter's arrays
    assert blocks == token_block_ids(np.array(tokens, dtype=np.int64), 64)


@pytest.mark.parametrize("bad", [-1, 1 << 32])
def test_ids_no_tokenizer_makes_give_no_blocks(bad):
    tokens = [*range(63), bad]
    assert token_block_ids(tokens, 16) == ()
    assert token_block_ids(np.array(tokens, dtype=np.int64), 16) == ()


def test_a_token_is_a_word_as_four_bytes_of_text_are():
    """One hash for both paths: a text block of 16 tokens is 64 bytes read as 16 words."""
    text = "abcdefghijklmnop" * 8
    words = [int.from_bytes(text[i:i + 4].encode(), "little") for i in range(0, len(text), 4)]
    assert token_block_ids(words, 16) == text_block_ids(text, 16)
