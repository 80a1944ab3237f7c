"""long-context: documents fit the local model; a distractor code is wrong."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer

from quantize.evals.tasks.long_context import LongContextTask
from serving.sim.tokens import count_tokens
from tests.quantize.evals.completions import text


def test_long_context_documents_fit_the_local_model() -> None:
    items = LongContextTask().generate(0, 100)
    tokenizer_json = Path.home() / ".cache" / "duet" / "models" / "smollm2-135m-instruct" / "tokenizer.json"
    if tokenizer_json.is_file():  # the real count, when the local model is built
        tokenizer = Tokenizer.from_file(str(tokenizer_json))
        assert all(1000 <= len(tokenizer.encode(i.last_user_message()).ids) <= 1500 for i in items)
    for item in items:
        assert 850 <= count_tokens(item.last_user_message()) <= 1500
        assert 0.5 <= item.expected["depth"] <= 0.95
        assert item.expected["code"] in item.last_user_message()


def test_long_context_rejects_a_distractor_code() -> None:
    kind = LongContextTask()
    item = kind.generate(0, 1)[0]
    others = [c for c in __import__("re").findall(r"[A-Z]{2}-\d{4}", item.last_user_message())
              if c != item.expected["code"]]
    assert others, "each document plants distractor codes"
    assert not kind.verify(item, text(others[0])).correct
    assert kind.verify(item, text(f"The code is {item.expected['code'].lower()}.")).correct

