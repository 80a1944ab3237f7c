"""A request's checkable contract and the rule a chat completion breaks, table by table."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.flow.body import ChatBody, MessagesBody, validate_body
from gateway.flow.contract import (
    INVALID_JSON_CONTENT,
    INVALID_TOOL_ARGUMENTS,
    MISSING_TOOL_CALL,
    NOT_JSON,
    SCHEMA_MISMATCH,
    UNKNOWN_TOOL,
    contract_of,
    violation,
)

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"], "additionalProperties": False}}}
SCHEMA = {"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]}


def chat(**fields: Any) -> ChatBody:
    return validate_body({"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}, ChatBody)[1]


def completion(content: str | None = None, calls: list[tuple[str, str]] = ()) -> bytes:  # type: ignore[assignment]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, (n, a) in enumerate(calls)]
    return orjson.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


def test_requests_without_anything_to_check_carry_no_contract() -> None:
    assert contract_of(chat()) is None
    assert contract_of(chat(tools=[WEATHER], tool_choice="none")) is None
    assert contract_of(chat(response_format={"type": "text"})) is None
    messages = validate_body({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                              "tools": [WEATHER]}, MessagesBody)[1]
    assert contract_of(messages) is None  # another API's answer shape: not read


CASES = [
    # (request fields, answer, broken rule)
    ({"tools": [WEATHER]}, completion(calls=[("get_weather", '{"city": "Oslo"}')]), None),
    ({"tools": [WEATHER]}, completion(calls=[("get_weather", '{"city": "Oslo", "days": 2}')]), None),
    ({"tools": [WEATHER]}, completion("It is sunny."), None),  # auto: a text answer is allowed
    ({"tools": [WEATHER], "tool_choice": "required"}, completion("It is sunny."), MISSING_TOOL_CALL),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
     completion("no"), MISSING_TOOL_CALL),
    ({"tools": [WEATHER]}, completion(calls=[("get_wether", '{"city": "Oslo"}')]), UNKNOWN_TOOL),
    ({"tools": [WEATHER]}, completion(calls=[("get_weather", '{"city": "Oslo"')]), INVALID_TOOL_ARGUMENTS),
    ({"tools": [WEATHER]}, completion(calls=[("get_weather", '{"town": "Oslo"}')]), INVALID_TOOL_ARGUMENTS),
    ({"tools": [WEATHER]}, completion(calls=[("get_weather", '{"city": "Oslo", "days": 0}')]), INVALID_TOOL_ARGUMENTS),
    ({"tools": [WEATHER]}, completion(calls=[("get_weather", '["Oslo"]')]), INVALID_TOOL_ARGUMENTS),
    ({"response_format": {"type": "json_object"}}, completion('{"a": 1}'), None),
    ({"response_format": {"type": "json_object"}}, completion("Sure! {a: 1}"), INVALID_JSON_CONTENT),
    ({"response_format": {"type": "json_object"}}, completion("[1, 2]"), INVALID_JSON_CONTENT),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}}},
     completion('{"total": 12.5}'), None),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}}},
     completion('{"total": "12.5"}'), SCHEMA_MISMATCH),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}}},
     completion("total: 12.5"), INVALID_JSON_CONTENT),
    ({"tools": [WEATHER]}, b"<html>oops</html>", NOT_JSON),
    # vLLM's Hermes parser leaves a call whose JSON does not parse in the text
    ({"tools": [WEATHER]}, completion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}\n</tool_call>'),
     INVALID_TOOL_ARGUMENTS),
    ({"tools": [WEATHER]}, completion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
     None),
    ({"tools": [WEATHER]}, completion('<tool_call>\n{"name": "get_weather", "arguments": {"town": "Oslo"}}'),
     INVALID_TOOL_ARGUMENTS),
]


@pytest.mark.parametrize(("fields", "answer", "broken"), CASES)
def test_the_rule_an_answer_breaks(fields: dict[str, Any], answer: bytes, broken: str | None) -> None:
    contract = contract_of(chat(**fields))
    assert contract is not None
    assert violation(contract, answer) == broken


def test_a_schema_that_is_not_a_json_schema_only_asks_for_a_json_object() -> None:
    odd = {"type": "function", "function": {"name": "f", "parameters": {"type": 12}}}
    contract = contract_of(chat(tools=[odd]))
    assert contract is not None
    assert violation(contract, completion(calls=[("f", '{"anything": true}')])) is None
    assert violation(contract, completion(calls=[("f", "not json")])) == INVALID_TOOL_ARGUMENTS


def test_every_choice_is_checked() -> None:
    contract = contract_of(chat(tools=[WEATHER], n=2))
    assert contract is not None
    good, bad = (orjson.loads(completion(calls=[("get_weather", a)]))["choices"][0] for a in ('{"city": "x"}', "{"))
    both = orjson.dumps({"choices": [good, {**bad, "index": 1}]})
    assert violation(contract, both) == INVALID_TOOL_ARGUMENTS
