"""Trace block ids mapped onto other block sizes."""

import pytest

from gateway.fleet.workload.prefix import PromptBlocks


@pytest.mark.parametrize("block_size", [16, 128, 512, 1024])
def test_equal_trace_prefixes_share_leading_hashes_at_any_block_size(block_size):
    a = PromptBlocks((0, 1, 2, 3), 512)
    b = PromptBlocks((0, 1, 9, 10), 512)  # same first 1,024 tokens, then different
    ha, hb = a.chained(block_size, 2048), b.chained(block_size, 2048)
    assert len(ha) == len(hb) == 2048 // block_size
    shared = next(i for i, (x, y) in enumerate(zip(ha, hb, strict=True)) if x != y)
    assert shared == 1024 // block_size


def test_a_difference_changes_every_later_hash():
    a = PromptBlocks((0, 1, 2), 512).chained(128, 1536)
    b = PromptBlocks((7, 1, 2), 512).chained(128, 1536)  # only the first block differs
    assert not set(a) & set(b)


def test_only_full_blocks_within_the_prompt_and_the_ids_are_hashed():
    blocks = PromptBlocks((0, 1), 512)  # a 700-token prompt: one full trace block and a partial one
    assert len(blocks.chained(128, 700)) == 5  # 640 tokens in full 128-token blocks
    assert len(blocks.chained(128, 300)) == 2  # a prompt cut to fit a context keeps its head
    assert len(blocks.chained(128, 5000)) == 8  # no more than the ids cover
    assert blocks.chained(16, 700)[:32] == PromptBlocks((0, 5), 512).chained(16, 700)[:32]


def test_a_block_straddling_two_trace_blocks_is_keyed_by_the_one_holding_its_last_token():
    # 384-token blocks over 512-token ids: block 1 (tokens 384..767) ends in trace block 1
    a = PromptBlocks((0, 1), 512).chained(384, 1024)
    b = PromptBlocks((0, 2), 512).chained(384, 1024)
    assert a[0] == b[0] and a[1] != b[1]
