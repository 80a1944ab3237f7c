"""Every task type: seeded generation (same seed, same items, in any process), the verifier
accepts the generated expected answer and rejects a wrong one; then each task's own cases."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from quantize.errors import SuiteError
from quantize.evals.agent import AgentTask
from quantize.evals.chat import THRESHOLD, ChatTask, with_reference
from quantize.evals.coding import CodingTask
from quantize.evals.extraction import ExtractionTask
from quantize.evals.items import ModelAnswer
from quantize.evals.long_context import LongContextTask
from quantize.evals.reasoning import ReasoningTask
from quantize.evals.sandbox import Limits, Sandbox
from quantize.evals.suite import TASK_NAMES, build_suite, task_types
from serving.sim.tokens import count_tokens

SAMPLES = {"coding": 12}  # coding verification runs a process per item
TYPES = task_types(Sandbox(Limits(wall_s=5.0, cpu_s=2)))


def text(answer: str) -> dict:  # type: ignore[type-arg]
    return ModelAnswer(answer).as_completion()


@pytest.mark.parametrize("task", TASK_NAMES)
def test_same_seed_same_items_and_prefixes_agree(task: str) -> None:
    kind = TYPES[task]
    assert kind.generate(5, 40) == kind.generate(5, 40)
    assert kind.generate(5, 40)[:10] == kind.generate(5, 10)
    assert kind.generate(5, 20) != kind.generate(6, 20)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_hundreds_of_distinct_items(task: str) -> None:
    items = TYPES[task].generate(0, 300)
    assert len({item.id for item in items}) == 300
    assert len({json.dumps(item.request, sort_keys=True) for item in items}) >= 100


@pytest.mark.parametrize("task", TASK_NAMES)
def test_verifier_accepts_the_expected_answer_and_rejects_a_wrong_one(task: str) -> None:
    kind = TYPES[task]
    for item in kind.generate(1, SAMPLES.get(task, 100)):
        assert kind.verify(item, kind.reference_answer(item).as_completion()).correct, item.id
        assert not kind.verify(item, kind.wrong_answer(item).as_completion()).correct, item.id


@pytest.mark.parametrize("task", TASK_NAMES)
def test_an_empty_answer_is_wrong(task: str) -> None:
    kind = TYPES[task]
    item = kind.generate(2, 1)[0]
    if task == "chat":
        item = with_reference(item, "a real reference answer")
    assert not kind.verify(item, text("")).correct
    assert not kind.verify(item, {"choices": []}).correct


def test_the_suite_is_the_same_under_another_hash_seed() -> None:
    """Generation must not depend on set or dict order of strings (PYTHONHASHSEED)."""
    script = "from quantize.evals.suite import build_suite; print(build_suite(seed=3, samples=30).sha256())"
    hashes = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": str(h), "PATH": "/usr/bin:/bin"}).stdout for h in (1, 2)}
    assert len(hashes) == 1 and hashes == {build_suite(seed=3, samples=30).sha256() + "\n"}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"samples": 0}, "samples must be"),
    ({"samples": 10**6}, "samples must be"),
    ({"tasks": ["coding", "poetry"]}, "unknown task type"),
])
def test_bad_suite_input_is_refused(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(SuiteError, match=message):
        build_suite(**kwargs)


def test_unknown_suite_is_refused() -> None:
    with pytest.raises(SuiteError, match="unknown suite"):
        build_suite("huge")


# -- coding ---------------------------------------------------------------------------------------

def test_coding_accepts_bare_code_and_other_fences() -> None:
    kind = TYPES["coding"]
    item = kind.generate(0, 1)[0]
    reference = item.expected["reference"]
    assert kind.verify(item, text(reference)).correct
    assert kind.verify(item, text(f"Here you go:\n```\n{reference}```\nDone.")).correct


def test_coding_answer_that_loops_is_wrong_not_stuck() -> None:
    kind = CodingTask(Sandbox(Limits(wall_s=3.0, cpu_s=1)))
    item = kind.generate(0, 1)[0]
    verdict = kind.verify(item, text(f"```python\ndef {item.expected['function']}(*a):\n    while True: pass\n```"))
    assert not verdict.correct and verdict.answer.startswith("timeout")


def test_coding_prompt_shows_the_signature_and_examples() -> None:
    item = TYPES["coding"].generate(0, 1)[0]
    prompt = item.last_user_message()
    assert item.expected["function"] in prompt and "Examples:" in prompt and "```python" in prompt
    assert len(item.expected["tests"]) == 6


# -- reasoning ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "correct"), [
    ("Step one gives 3, so\nAnswer: {x}", True),
    ("The total is {x}.", True),
    ("Answer: {x}.0", True),
    ("answer is **{x}**", True),
    ("Answer: {x}, not 7", True),
    ("I think it is {x} or 3", False),
    ("No idea.", False),
])
def test_reasoning_reads_the_final_number(answer: str, correct: bool) -> None:
    kind = ReasoningTask()
    item = next(i for i in kind.generate(0, 50) if i.expected not in (3, 7))
    assert kind.verify(item, text(answer.format(x=item.expected))).correct is correct


def test_reasoning_thousands_separator() -> None:
    kind = ReasoningTask()
    item = dataclasses.replace(kind.generate(0, 1)[0], expected=12345)
    assert kind.verify(item, text("That makes 12,345 in all.\nAnswer: 12,345")).correct


# -- extraction -----------------------------------------------------------------------------------

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


# -- agent ----------------------------------------------------------------------------------------

def test_agent_requires_schema_valid_arguments() -> None:
    kind = AgentTask()
    item = next(i for i in kind.generate(0, 40) if i.expected["name"] == "get_weather")
    good = dict(item.expected["arguments"])
    assert kind.verify(item, ModelAnswer(tool_name="get_weather", tool_arguments=good).as_completion()).correct
    bad_enum = {**good, "unit": "kelvin"}
    verdict = kind.verify(item, ModelAnswer(tool_name="get_weather", tool_arguments=bad_enum).as_completion())
    assert not verdict.correct and verdict.detail.startswith("schema")
    extra = {**good, "country": "x"}
    assert not kind.verify(item, ModelAnswer(tool_name="get_weather", tool_arguments=extra).as_completion()).correct
    missing = {"city": good["city"]}
    assert not kind.verify(item, ModelAnswer(tool_name="get_weather", tool_arguments=missing).as_completion()).correct


def test_agent_key_values_must_be_right() -> None:
    kind = AgentTask()
    item = next(i for i in kind.generate(0, 40) if i.expected["name"] == "convert_currency")
    wrong_amount = {**item.expected["arguments"], "amount": item.expected["arguments"]["amount"] + 1}
    verdict = kind.verify(item, ModelAnswer(tool_name="convert_currency", tool_arguments=wrong_amount).as_completion())
    assert not verdict.correct and "amount" in verdict.detail


def test_agent_accepts_hermes_markup_in_the_text() -> None:
    kind = AgentTask()
    item = kind.generate(0, 1)[0]
    call = json.dumps({"name": item.expected["name"], "arguments": item.expected["arguments"]})
    assert kind.verify(item, text(f"<tool_call>\n{call}\n</tool_call>")).correct
    assert not kind.verify(item, text("<tool_call>\n{broken\n</tool_call>")).correct


def test_agent_request_offers_every_tool() -> None:
    item = AgentTask().generate(0, 1)[0]
    assert len(item.request["tools"]) == 4 and item.request["tool_choice"] == "auto"


# -- long-context ---------------------------------------------------------------------------------

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


# -- chat -----------------------------------------------------------------------------------------

def test_chat_agreement_threshold() -> None:
    kind = ChatTask()
    item = with_reference(kind.generate(0, 1)[0], "Plants turn sunlight, water and air into sugar and oxygen.")
    assert kind.verify(item, text("Plants turn sunlight, water and air into sugar and oxygen.")).score == 1.0
    close = kind.verify(item, text("Plants use sunlight, water and air to make sugar and oxygen."))
    assert close.correct and close.score >= THRESHOLD
    assert not kind.verify(item, text("The stock market went up today.")).correct
