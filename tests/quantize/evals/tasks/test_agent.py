"""agent: schema-valid arguments, the key values right, Hermes markup in the text."""

from __future__ import annotations

import json

from quantize.evals.items import ModelAnswer
from quantize.evals.tasks.agent import AgentTask
from tests.quantize.evals.completions import text


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

