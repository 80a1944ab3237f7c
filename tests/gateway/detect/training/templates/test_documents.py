"""The documents: each a function of its seed, and a document, not a request (no question to end
it, no word of an extraction instruction), so that what to extract is only ever said around it."""

from __future__ import annotations

import random

import pytest

from gateway.detect.training.templates import documents
from gateway.detect.training.templates.documents import DOCS

ALL = (*DOCS, documents.meeting_notes, documents.listing, documents.ticket, documents.booking, documents.payslip,
       documents.record, documents.notice, documents.receipt, documents.shipping, documents.job_post)


@pytest.mark.parametrize("document", ALL, ids=lambda d: d.__name__)
def test_a_document_is_a_function_of_its_seed_and_asks_nothing(document):
    for seed in range(40):
        text = document(random.Random(f"s{seed}"))
        assert text == document(random.Random(f"s{seed}"))
        assert text.strip() and not text.rstrip().endswith("?")
        assert not any(word in text.lower() for word in ("json", "extract", "return ", "list ", "output", "yaml"))
