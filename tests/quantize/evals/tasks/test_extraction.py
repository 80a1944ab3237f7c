"""extraction: formatting and rounding tolerated; the documents hold the figures."""

from __future__ import annotations

from quantize.evals.tasks.extraction import ExtractionTask
from tests.quantize.evals.completions import text


def test_extraction_tolerates_formatting_and_rounding() -> None:
    kind = ExtractionTask()
    for item in kind.generate(0, 60):
        value, tolerance = item.expected["value"], item.expected["tolerance"]
        assert kind.verify(item, text(f"${value:,} million in {2020}")).correct
        assert kind.verify(item, text(f"{value + tolerance * 0.9}")).correct
        assert not kind.verify(item, text(f"{value + tolerance * 1.5 + 1}")).correct


def test_extraction_documents_hold_the_figures() -> None:
    for item in ExtractionTask().generate(0, 30):
        assert "Question:" in item.last_user_message() and "million" in item.last_user_message().lower()

