"""The extraction templates whose instruction is only in the system prompt send the document alone
as the user turn."""

from __future__ import annotations

import random

import pytest

from gateway.detect.training.templates.extraction import extract_form_fill, extract_instructed, extract_pipeline

# extract_system (held out) has this shape too; these were written after it was first measured.
INSTRUCTION_IN_SYSTEM = (extract_instructed, extract_pipeline, extract_form_fill)


@pytest.mark.parametrize("template", INSTRUCTION_IN_SYSTEM, ids=lambda t: t.__name__)
def test_the_instruction_is_in_the_system_prompt_and_the_user_turn_is_the_document(template):
    for seed in range(60):
        system, user = template(random.Random(f"s{seed}"))
        assert system["role"] == "system" and user["role"] == "user"
        document = user["content"].lower()
        assert not document.rstrip().endswith("?")
        assert not any(word in document for word in ("json", "extract", "return ", "list ", "output", "yaml"))
        assert sum(ch.isdigit() for ch in document) >= 2  # figures, as in a word problem: the hard case
