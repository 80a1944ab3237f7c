"""A request's prompt as the prefix index reads it: its view's parts (``gateway.endpoints.prompt``)
cut into text blocks without a tokenizer and into token blocks with one (tokenized once, remembered)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from gateway.endpoints import ChatBody, CompletionBody, validate_body
from gateway.flow.prefix import prompt_blocks
from gateway.state.prefix_blocks import text_block_ids, token_block_ids
from gateway.tokens import ApproxTokenCounter, HfTokenCounter

WORDS = ["system", "user", "assistant", "tool", "be", "brief", "what", "is", "a", "cache", "block", "more", "[UNK]"]


def chat(messages: list[dict[str, Any]], **extra: Any) -> ChatBody:
    _, body = validate_body({"model": "m", "messages": messages, **extra}, ChatBody)
    assert isinstance(body, ChatBody)
    return body


@pytest.fixture
def tokenizer_path(tmp_path: Path) -> str:
    """A word-level tokenizer.json (the format vLLM's models ship), built here: one id per word."""
    tokenizer = Tokenizer(WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path)


def blocks(body: ChatBody | CompletionBody, counter: Any, block_tokens: int) -> tuple[int, ...]:
    return prompt_blocks(body, body.prompt_view(), counter, block_tokens)


def test_without_a_tokenizer_blocks_are_cut_from_the_text_of_the_prompts_parts():
    body = chat([{"role": "user", "content": "what is a cache block " * 50}])
    assert blocks(body, ApproxTokenCounter(), 16) == text_block_ids("\n".join(body.prompt_view().parts), 16)
    _, completion = validate_body({"model": "m", "prompt": "once upon"}, CompletionBody)
    assert blocks(completion, ApproxTokenCounter(), 16) == text_block_ids("once upon", 16)


def test_token_ids_given_as_the_prompt_are_cut_as_given():
    _, body = validate_body({"model": "m", "prompt": list(range(40))}, CompletionBody)
    assert blocks(body, ApproxTokenCounter(), 16) == token_block_ids(list(range(40)), 16)


def test_with_a_tokenizer_each_text_is_tokenized_once_and_the_next_turn_extends_the_blocks(tokenizer_path):
    counter = HfTokenCounter(tokenizer_path)
    calls = 0
    encode = counter._tokenizer.encode

    def counting(*args: Any, **kwargs: Any) -> Any:  # counts the real tokenizer's calls
        nonlocal calls
        calls += 1
        return encode(*args, **kwargs)

    counter._tokenizer.encode = counting  # type: ignore[method-assign]
    turn1 = [{"role": "system", "content": "be brief " * 20}, {"role": "user", "content": "what is a cache " * 20}]
    blocks1 = blocks(chat(turn1), counter, 8)
    first_calls = calls
    turn2 = [*turn1, {"role": "assistant", "content": "a block " * 20}, {"role": "user", "content": "more"}]
    blocks2 = blocks(chat(turn2), counter, 8)
    assert len(blocks2) > len(blocks1) > 0 and blocks2[:len(blocks1)] == blocks1
    assert calls - first_calls == 3  # only the new texts: assistant's, "more", and nothing of turn 1
    ids = [t for part in chat(turn1).prompt_view().parts for t in counter.token_ids(part)]
    assert blocks1 == token_block_ids(ids, 8)


def test_the_remembered_ids_are_bounded_by_their_texts_length(tokenizer_path):
    counter = HfTokenCounter(tokenizer_path, remembered_chars=100)
    for i in range(50):
        counter.token_ids("cache " * 5 + str(i))
    assert counter._chars <= 100 and len(counter._ids) <= 4
    assert counter.count_text("what is a cache") == 4


def test_the_counter_keeps_ids_as_read_only_32_bit_arrays(tokenizer_path):
    ids = HfTokenCounter(tokenizer_path).token_ids("what is a cache")
    assert ids.dtype == np.uint32 and not ids.flags.writeable and len(ids) == 4
