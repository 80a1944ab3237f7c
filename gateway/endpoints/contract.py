"""A request's checkable contract, and whether an answer keeps it.

A request carries a contract a program can check when it offers tools whose parameters are a
JSON schema (a tool call must name an offered tool, its arguments must be JSON matching that
schema, and a tool choice that demands a call must get one; a Hermes ``<tool_call>`` left in the
text is a call the server's parser could not read), or asks for JSON output against a schema
(the text must be JSON matching it) or for a JSON object. ``violation`` says which rule a whole
answer breaks, as a short kebab-case reason (the escalation header's value and the metric's
label). The three APIs say it in their own words, read here into one ``Contract``:

- chat completions: ``tools[].function.parameters``; a call demanded by ``tool_choice``
  "required" or a named function; ``response_format`` ``json_schema`` (its
  ``json_schema.schema``) or ``json_object``; each choice's ``message`` is read.
- Responses: function tools' ``parameters``; "required" or ``{"type": "function", ...}``;
  ``text.format`` ``json_schema`` (its ``schema``) or ``json_object``; the ``output`` is read:
  message items' ``output_text`` and ``function_call`` items.
- Messages: ``tools[].input_schema``; ``{"type": "any"}`` or ``{"type": "tool", ...}``; no JSON
  output in the API; the ``content`` is read: ``text`` and ``tool_use`` blocks (whose
  ``input`` is already an object).

"none" as the tool choice (``{"type": "none"}`` for Messages) leaves the tools unchecked. A
schema that is not itself a valid JSON schema cannot be checked: its arguments must still be a
JSON object, and nothing more is claimed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from jsonschema import Draft202012Validator, SchemaError
from jsonschema.protocols import Validator

from gateway.endpoints import ChatBody, MessagesBody, RequestBody, ResponsesBody

# Reasons, in the order an answer is checked.
NOT_JSON = "invalid-json"  # the completion itself could not be read
MISSING_TOOL_CALL = "missing-tool-call"
UNKNOWN_TOOL = "unknown-tool"
INVALID_TOOL_ARGUMENTS = "invalid-tool-arguments"
INVALID_JSON_CONTENT = "invalid-json-content"
SCHEMA_MISMATCH = "schema-mismatch"


# An API's whole answer as chat messages (``content`` text, ``tool_calls`` with ``function``
# name and arguments text): the rules read one shape. Raises KeyError/TypeError on another shape.
Reader = Callable[[Any], list[Any]]


def chat_messages(document: Any) -> list[Any]:
    return [choice["message"] for choice in document["choices"]]


def responses_messages(document: Any) -> list[Any]:
    """A response's ``output`` as one message: its text, and its function calls."""
    texts, calls = [], []
    for item in document["output"]:
        if item["type"] == "message":
            texts += [part["text"] for part in item["content"] if part.get("type") == "output_text"]
        elif item["type"] == "function_call":
            calls.append({"function": {"name": item.get("name"), "arguments": item.get("arguments")}})
    return [{"content": "".join(texts) if texts else None, "tool_calls": calls}]


def messages_messages(document: Any) -> list[Any]:
    """A message's ``content`` blocks as one message: its text, and its tool uses (their
    ``input`` already parsed: written back as text to be read like a chat call's arguments; one
    that is not an object is not valid arguments)."""
    texts, calls = [], []
    for block in document["content"]:
        if block["type"] == "text":
            texts.append(block["text"])
        elif block["type"] == "tool_use":
            given = block.get("input")
            arguments = orjson.dumps(given).decode() if isinstance(given, dict) else None
            calls.append({"function": {"name": block.get("name"), "arguments": arguments}})
    return [{"content": "".join(texts) if texts else None, "tool_calls": calls}]


@dataclass(frozen=True, slots=True)
class Contract:
    """``tools``: offered function name -> its parameters schema (None: none given, so any JSON
    object); ``call_required``: the tool choice demands a call; ``content_schema``: the schema
    the text must match; ``json_content``: the text must be JSON (an object when there is no
    schema); ``read``: the API's answer as chat messages."""

    tools: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    call_required: bool = False
    json_content: bool = False
    content_schema: Mapping[str, Any] | None = None
    read: Reader = chat_messages


def contract_of(body: RequestBody) -> Contract | None:
    """The contract a chat, Responses or Messages request carries, or None when there is
    nothing to check (another endpoint, or no tools and no JSON output asked for)."""
    if type(body) is ChatBody:
        contract = _chat_contract(body)
    elif type(body) is ResponsesBody:
        contract = _responses_contract(body)
    elif type(body) is MessagesBody:
        contract = _messages_contract(body)
    else:
        return None
    return contract if contract.tools or contract.json_content else None


def violation(contract: Contract, payload: bytes) -> str | None:
    """The first rule ``payload`` (a whole answer, as the replica wrote it) breaks, or None when
    every choice keeps the contract."""
    try:
        messages = contract.read(orjson.loads(payload))
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return NOT_JSON
    for message in messages:
        if (reason := _message_violation(contract, message)) is not None:
            return reason
    return None


def _chat_contract(body: ChatBody) -> Contract:
    tools = _offered_tools([t.get("function") for t in body.tools or [] if isinstance(t, dict)], "parameters")
    tools = tools if body.tool_choice != "none" else {}
    json_content, schema = _response_format(getattr(body, "response_format", None))
    required = bool(tools) and (body.tool_choice == "required" or isinstance(body.tool_choice, dict))
    return Contract(tools, required, json_content, schema)


def _responses_contract(body: ResponsesBody) -> Contract:
    functions = [t for t in body.tools or [] if isinstance(t, dict) and t.get("type") == "function"]
    tools = _offered_tools(functions, "parameters") if body.tool_choice != "none" else {}
    text = getattr(body, "text", None)
    json_content, schema = _text_format(text.get("format") if isinstance(text, dict) else None)
    required = bool(tools) and (body.tool_choice == "required" or isinstance(body.tool_choice, dict))
    return Contract(tools, required, json_content, schema, responses_messages)


def _messages_contract(body: MessagesBody) -> Contract:
    choice = body.tool_choice.get("type") if isinstance(body.tool_choice, dict) else None
    tools = _offered_tools(body.tools or [], "input_schema") if choice != "none" else {}
    return Contract(tools, bool(tools) and choice in ("any", "tool"), read=messages_messages)


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


def _offered_tools(functions: list[Any], schema_key: str) -> dict[str, Mapping[str, Any] | None]:
    """Name -> schema (under ``schema_key``) of each function that has a name."""
    offered: dict[str, Mapping[str, Any] | None] = {}
    for function in functions:
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            schema = function.get(schema_key)
            offered[function["name"]] = schema if isinstance(schema, dict) else None
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


def _text_format(text_format: Any) -> tuple[bool, Mapping[str, Any] | None]:
    """(text must be JSON, its schema) for a Responses ``text.format`` value (the schema sits
    in the format itself, not under ``json_schema``)."""
    if isinstance(text_format, dict) and text_format.get("type") == "json_schema":
        schema = text_format.get("schema")
        return True, schema if isinstance(schema, dict) else None
    return _response_format(text_format)
