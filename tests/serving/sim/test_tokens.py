"""Deterministic token counting, prefix hashing and text."""

from __future__ import annotations

from itertools import islice

from serving.sim.tokens import count_tokens, prefix_hashes, split_text, token_ids_of_length, words


def test_counts_are_deterministic_and_about_four_chars() -> None:
    assert count_tokens("a" * 40) == 10 and count_tokens("abc") == 1 and count_tokens("") == 0


def test_shared_prefixes_share_leading_hashes() -> None:
    base = "x" * 64 * 3
    a, b = prefix_hashes(base + "tail one", 16), prefix_hashes(base[:64] + "y" * 128, 16)
    assert len(a) == 3 and a[0] == b[0] and a[1] != b[1]
    assert prefix_hashes("short", 16) == ()


def test_words_repeat_per_seed_and_split_covers_text() -> None:
    assert list(islice(words(1), 20)) == list(islice(words(1), 20)) != list(islice(words(2), 20))
    assert "".join(split_text("abcdefghij", 3)) == "abcdefghij" and len(split_text("ab", 5)) == 5
    assert len(token_ids_of_length("hello world", 9)) == 9
