"""chat: agreement with the reference, against the threshold."""

from __future__ import annotations

from quantize.evals.tasks.chat import THRESHOLD, ChatTask, with_reference
from tests.quantize.evals.completions import text


def test_chat_agreement_threshold() -> None:
    kind = ChatTask()
    item = with_reference(kind.generate(0, 1)[0], "Plants turn sunlight, water and air into sugar and oxygen.")
    assert kind.verify(item, text("Plants turn sunlight, water and air into sugar and oxygen.")).score == 1.0
    close = kind.verify(item, text("Plants use sunlight, water and air to make sugar and oxygen."))
    assert close.correct and close.score >= THRESHOLD
    assert not kind.verify(item, text("The stock market went up today.")).correct
