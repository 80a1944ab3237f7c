"""The blend detector's instruction span: the first and last sentence of the user window, found
from the front and the tail exactly as splitting the whole window finds them."""

from __future__ import annotations

import random

from gateway.detect.blend_features import _SENTENCE, SPAN_CHARS, instruction
from gateway.detect.features import window


def _split(text: str) -> str:
    """The definition: every sentence of the window, stripped, the empty ones dropped."""
    sentences = [s.strip() for s in _SENTENCE.split(window(text)) if s.strip()]
    if not sentences:
        return ""
    first, last = sentences[0][:SPAN_CHARS], sentences[-1][-SPAN_CHARS:]
    return first if len(sentences) == 1 else f"{first}\n{last}"


def test_the_instruction_is_what_splitting_the_whole_window_gives():
    rng = random.Random(7)
    # pieces long enough that the last sentence often starts before the tail searched first
    pieces = list("ab de.!?:\n\t ") + ["\r\n", ". ", ".\n", "  ", "x" * 60, "y" * 300, "\n\n  \n"]
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        assert instruction(text) == _split(text), repr(text)


def test_one_sentence_is_given_once_however_long_and_however_it_is_surrounded():
    sentence = "Summarise the report below in three bullet points " + "and more " * 60
    for text in (sentence, f"\n\n  \n{sentence}\n\n", f"{sentence}.   ", "\n" * 300 + sentence):
        assert instruction(text) == sentence.strip()[:SPAN_CHARS] == _split(text)
    assert instruction("") == "" and instruction(" \n\t ") == ""
    assert instruction("First line.\nLast line?") == "First line.\nLast line?"
