"""A request's checkable contract, and whether an answer keeps it.

A chat request carries a contract a program can check when it offers tools whose parameters are
a JSON schema (a tool call must name an offered tool, its arguments must be JSON matching that
schema, and ``tool_choice`` "required" or a named tool demands a call; a Hermes ``<tool_call>``
left in the text is a call the server's parser could not read), or asks for
``response_format`` ``json_schema`` (the content must be JSON matching it) or ``json_object``
(the content must be a JSON object). ``violation`` says which rule a whole chat completion
breaks, as a short kebab-case reason (the escalation header's value and the metric's label).

Only ``/v1/chat/completions`` answers are read (the Messages and Responses APIs shape their
answers differently). A schema that is not itself a valid JSON schema cannot be checked: its
arguments must still be a JSON object, and nothing more is claimed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from jsonschema import Draft202012Validator, SchemaError
from jsonschema.protocols import Validator

from gateway.flow.body import ChatBody, RequestBody

# Reasons, in the order an answer is checked.
NOT_JSON = "invalid-json"  # the completion itself could not be read
MISSING_TOOL_CALL = "missing-tool-call"
UNKNOWN_TOOL = "unknown-tool"
INVALID_TOOL_ARGUMENTS = "invalid-tool-arguments"
INVALID_JSON_CONTENT = "invalid-json-content"
SCHEMA_MISMATCH = "schema-mismatch"


@dataclass(frozen=True, slots=True)
class Contract:
    """``tools``: offered function name -> its parameters schema (None: none given, so any JSON
    object); ``call_required``: tool_choice demands a call; ``content_schema``: the
    ``json_schema`` the content must match; ``json_content``: the content must be JSON (an
    object for ``json_object``)."""

    tools: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    call_required: bool = False
    json_content: bool = False
    content_schema: Mapping[str, Any] | None = None


def contract_of(body: RequestBody) -> Contract | None:
    """The contract a chat request carries, or None when there is nothing to check."""
    if type(body) is not ChatBody:
        return None
    tools = _offered_tools(body.tools or []) if body.tool_choice != "none" else {}
    json_content, schema = _response_format(getattr(body, "response_format", None))
    if not tools and not json_content:
        return None
    required = bool(tools) and (body.tool_choice == "required" or isinstance(body.tool_choice, dict))
    return Contract(tools, required, json_content, schema)


def violation(contract: Contract, payload: bytes) -> str | None:
    """The first rule ``payload`` (a whole chat completion, as the replica wrote it) breaks, or
    None when every choice keeps the contract."""
    try:
        document = orjson.loads(payload)
        choices = [c["message"] for c in document["choices"]]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return NOT_JSON
    for message in choices:
        if (reason := _message_violation(contract, message)) is not None:
            return reason
    return None


def _message_violation(contract: Contract, message: Any) -> str | None:
    if not isinstance(message, dict):
        return NOT_JSON
    calls = message.get("tool_calls") or []
    if contract.tools and calls:
        return next(filter(None, (_call_violation(contract.tools, call) for call in calls)), None)
    if contract.tools and isinstance(content := message.get("content"), str) and _MARKUP in content:
        return _markup_violation(contract.tools, content)
    if contract.call_required:
        return MISSING_TOOL_CALL
    if contract.json_content:
        return _content_violation(contract, message.get("content"))
    return None


def _call_violation(tools: Mapping[str, Mapping[str, Any] | None], call: Any) -> str | None:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or function.get("name") not in tools:
        return UNKNOWN_TOOL
    name = function["name"]
    arguments = _loads(function.get("arguments"))
    if not isinstance(arguments, dict) or not _matches(tools[name], arguments):
        return INVALID_TOOL_ARGUMENTS
    return None


def _markup_violation(tools: Mapping[str, Mapping[str, Any] | None], content: str) -> str | None:
    """A Hermes-style call left in the text: vLLM's tool parser gives the markup back as content
    when the JSON inside does not parse (or the server runs without a parser). A call that
    reads is checked like any other."""
    inside = content.split(_MARKUP, 1)[1].split("</tool_call>", 1)[0]
    call = _loads(inside.strip())
    if not isinstance(call, dict) or "arguments" not in call:
        return INVALID_TOOL_ARGUMENTS
    arguments = call["arguments"] if isinstance(call["arguments"], str) else orjson.dumps(call["arguments"]).decode()
    return _call_violation(tools, {"function": {"name": call.get("name"), "arguments": arguments}})


def _content_violation(contract: Contract, content: Any) -> str | None:
    value = _loads(content)
    if value is _INVALID or (contract.content_schema is None and not isinstance(value, dict)):
        return INVALID_JSON_CONTENT
    if contract.content_schema is not None and not _matches(contract.content_schema, value):
        return SCHEMA_MISMATCH
    return None


_INVALID = object()
_MARKUP = "<tool_call>"


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return _INVALID
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _INVALID


def _matches(schema: Mapping[str, Any] | None, value: Any) -> bool:
    validator = _validator(schema)
    return validator is None or validator.is_valid(value)


def _validator(schema: Mapping[str, Any] | None) -> Validator | None:
    """A validator for ``schema``, or None when there is no usable schema (none, or not a valid
    JSON schema: nothing beyond "a JSON object" can be claimed then)."""
    if schema is None:
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return None
    return Draft202012Validator(schema)


def _offered_tools(tools: list[dict[str, Any]]) -> dict[str, Mapping[str, Any] | None]:
    offered: dict[str, Mapping[str, Any] | None] = {}
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            offered[function["name"]] = parameters if isinstance(parameters, dict) else None
    return offered


def _response_format(response_format: Any) -> tuple[bool, Mapping[str, Any] | None]:
    """(content must be JSON, its schema) for a ``response_format`` value."""
    if not isinstance(response_format, dict):
        return False, None
    kind = response_format.get("type")
    if kind == "json_object":
        return True, None
    if kind == "json_schema":
        wrapper = response_format.get("json_schema")
        schema = wrapper.get("schema") if isinstance(wrapper, dict) else None
        return True, schema if isinstance(schema, dict) else None
    return False, None
