"""A request's checkable contract and the rule an answer breaks, table by table: chat
completions, then the Responses API and the Messages API (each API's own request fields and
answer shape, the same rules)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.endpoints import ChatBody, MessagesBody, ResponsesBody, validate_body
from gateway.endpoints.contract import (
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
    assert contract_of(messages(tools=[ANTHROPIC_WEATHER], tool_choice={"type": "none"})) is None
    assert contract_of(messages()) is None
    assert contract_of(responses(tools=[RESPONSES_WEATHER], tool_choice="none")) is None
    assert contract_of(responses(text={"format": {"type": "text"}})) is None


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


# ---- the Responses API: flat function tools, text.format, an output list ----

RESPONSES_WEATHER = {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}
ANTHROPIC_WEATHER = {"name": "get_weather", "description": "", "input_schema": WEATHER["function"]["parameters"]}


def responses(**fields: Any) -> ResponsesBody:
    return validate_body({"model": "m", "input": "hi", **fields}, ResponsesBody)[1]


def messages(**fields: Any) -> MessagesBody:
    return validate_body({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], **fields},
                         MessagesBody)[1]


def response(text: str | None = None, calls: list[tuple[str, str]] = ()) -> bytes:  # type: ignore[assignment]
    output: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs", "summary": []}]
    if text is not None:
        output.append({"type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    output += [{"type": "function_call", "id": f"fc{i}", "call_id": f"c{i}", "name": n, "arguments": a}
               for i, (n, a) in enumerate(calls)]
    return orjson.dumps({"id": "resp_1", "object": "response", "status": "completed", "output": output})


RESPONSES_CASES = [
    ({"tools": [RESPONSES_WEATHER]}, response(calls=[("get_weather", '{"city": "Oslo"}')]), None),
    ({"tools": [RESPONSES_WEATHER]}, response("It is sunny."), None),
    ({"tools": [RESPONSES_WEATHER], "tool_choice": "required"}, response("It is sunny."), MISSING_TOOL_CALL),
    ({"tools": [RESPONSES_WEATHER], "tool_choice": {"type": "function", "name": "get_weather"}}, response("no"),
     MISSING_TOOL_CALL),
    ({"tools": [RESPONSES_WEATHER]}, response(calls=[("get_wether", '{"city": "Oslo"}')]), UNKNOWN_TOOL),
    ({"tools": [RESPONSES_WEATHER]}, response(calls=[("get_weather", '{"city": "Oslo"')]), INVALID_TOOL_ARGUMENTS),
    ({"tools": [RESPONSES_WEATHER]}, response(calls=[("get_weather", '{"town": "Oslo"}')]), INVALID_TOOL_ARGUMENTS),
    ({"tools": [RESPONSES_WEATHER]}, response('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}'),
     INVALID_TOOL_ARGUMENTS),
    # A web-search tool has no schema to hold a call to: only function tools are the contract.
    ({"tools": [{"type": "web_search"}, RESPONSES_WEATHER]}, response(calls=[("web_search", "{}")]), UNKNOWN_TOOL),
    ({"text": {"format": {"type": "json_object"}}}, response('{"a": 1}'), None),
    ({"text": {"format": {"type": "json_object"}}}, response("Sure! {a: 1}"), INVALID_JSON_CONTENT),
    ({"text": {"format": {"type": "json_schema", "name": "t", "schema": SCHEMA}}}, response('{"total": 12.5}'), None),
    ({"text": {"format": {"type": "json_schema", "name": "t", "schema": SCHEMA}}}, response('{"total": "x"}'),
     SCHEMA_MISMATCH),
    ({"text": {"format": {"type": "json_schema", "name": "t", "schema": SCHEMA}}}, response(), INVALID_JSON_CONTENT),
    ({"tools": [RESPONSES_WEATHER]}, orjson.dumps({"choices": []}), NOT_JSON),  # not a response object
]


@pytest.mark.parametrize(("fields", "answer", "broken"), RESPONSES_CASES)
def test_the_rule_a_response_breaks(fields: dict[str, Any], answer: bytes, broken: str | None) -> None:
    contract = contract_of(responses(**fields))
    assert contract is not None
    assert violation(contract, answer) == broken


# ---- the Messages API: tools with an input_schema, tool_choice by type, content blocks ----

def message(text: str | None = None, uses: list[tuple[str, Any]] = ()) -> bytes:  # type: ignore[assignment]
    content: list[dict[str, Any]] = [] if text is None else [{"type": "text", "text": text}]
    content += [{"type": "tool_use", "id": f"tu{i}", "name": n, "input": given} for i, (n, given) in enumerate(uses)]
    return orjson.dumps({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
                         "stop_reason": "tool_use" if uses else "end_turn"})


MESSAGES_CASES = [
    ({"tools": [ANTHROPIC_WEATHER]}, message(uses=[("get_weather", {"city": "Oslo"})]), None),
    ({"tools": [ANTHROPIC_WEATHER]}, message("It is sunny."), None),
    ({"tools": [ANTHROPIC_WEATHER], "tool_choice": {"type": "auto"}}, message("It is sunny."), None),
    ({"tools": [ANTHROPIC_WEATHER], "tool_choice": {"type": "any"}}, message("It is sunny."), MISSING_TOOL_CALL),
    ({"tools": [ANTHROPIC_WEATHER], "tool_choice": {"type": "tool", "name": "get_weather"}}, message("no"),
     MISSING_TOOL_CALL),
    ({"tools": [ANTHROPIC_WEATHER]}, message(uses=[("get_wether", {"city": "Oslo"})]), UNKNOWN_TOOL),
    ({"tools": [ANTHROPIC_WEATHER]}, message(uses=[("get_weather", {"town": "Oslo"})]), INVALID_TOOL_ARGUMENTS),
    ({"tools": [ANTHROPIC_WEATHER]}, message(uses=[("get_weather", {"city": "Oslo", "days": 0})]),
     INVALID_TOOL_ARGUMENTS),
    ({"tools": [ANTHROPIC_WEATHER]}, message(uses=[("get_weather", "Oslo")]), INVALID_TOOL_ARGUMENTS),
    # vLLM's parser could not read the call: the markup comes back as a text block
    ({"tools": [ANTHROPIC_WEATHER]}, message('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}'),
     INVALID_TOOL_ARGUMENTS),
    ({"tools": [ANTHROPIC_WEATHER]}, orjson.dumps({"type": "error", "error": {"message": "x"}}), NOT_JSON),
]


@pytest.mark.parametrize(("fields", "answer", "broken"), MESSAGES_CASES)
def test_the_rule_a_message_breaks(fields: dict[str, Any], answer: bytes, broken: str | None) -> None:
    contract = contract_of(messages(**fields))
    assert contract is not None
    assert violation(contract, answer) == broken
