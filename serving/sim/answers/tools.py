"""Tool calls: which function the simulated model calls, and arguments valid for its schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def chosen_tool(tools: list[dict[str, Any]], tool_choice: object) -> tuple[str, dict[str, Any], bool] | None:
    """The function to call: ``(name, parameters schema, named)``, or None for no call.

    ``tool_choice`` "none" means no call; a named choice forces that function; "auto" and
    "required" call the first tool (a simulated model always decides to use its tools).
    """
    if not tools or tool_choice == "none":
        return None
    functions = {t["function"]["name"]: t["function"] for t in tools if isinstance(t.get("function"), dict)}
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        if name in functions:
            return name, functions[name].get("parameters") or {}, True
        return None
    first = next(iter(functions.values()), None)
    if first is None:
        return None
    return first["name"], first.get("parameters") or {}, False


def arguments_json(schema: dict[str, Any]) -> str:
    """A JSON text that validates against ``schema`` (objects carry every property), spaced as
    Hermes-style models write it and as vLLM re-serialises it (``json.dumps``)."""
    return json.dumps(example_value(schema), ensure_ascii=False)


def example_value(schema: dict[str, Any]) -> Any:
    """A value of the type ``schema`` describes: first enum/const value, else by ``type``."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return example_value(schema[key][0])
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    make: Callable[[dict[str, Any]], Any] = _BY_TYPE.get(str(kind), _string)
    return make(schema)


def _object(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    return {name: example_value(sub if isinstance(sub, dict) else {}) for name, sub in props.items()}


def _array(schema: dict[str, Any]) -> list[Any]:
    found = schema.get("items")
    items: dict[str, Any] = found if isinstance(found, dict) else {}
    return [example_value(items) for _ in range(max(1, int(schema.get("minItems", 1))))]


def _string(schema: dict[str, Any]) -> str:
    formats = {"date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "email": "sim@example.com",
               "uri": "https://example.com"}
    text = formats.get(schema.get("format", ""), "example")
    return text.ljust(int(schema.get("minLength", 0)), "x")


def _integer(schema: dict[str, Any]) -> int:
    return int(schema.get("minimum", 1))


def _number(schema: dict[str, Any]) -> float:
    return float(schema.get("minimum", 1.5))


def _true(schema: dict[str, Any]) -> bool:
    return True


def _null(schema: dict[str, Any]) -> None:
    return None


_BY_TYPE: dict[str, Callable[[dict[str, Any]], Any]] = {
    "object": _object,
    "array": _array,
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _true,
    "null": _null,
}
