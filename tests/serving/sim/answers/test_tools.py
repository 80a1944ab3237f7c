"""Tool calls: the function chosen and arguments that fit its JSON schema."""

from __future__ import annotations

import json

from serving.sim.answers.tools import arguments_json, chosen_tool

TOOLS = [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
         {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}}]


def test_choice_follows_tool_choice() -> None:
    assert chosen_tool(TOOLS, "none") is None
    assert chosen_tool(TOOLS, "auto") == ("a", {"type": "object"}, False)
    assert chosen_tool(TOOLS, {"type": "function", "function": {"name": "b"}}) == ("b", {"type": "object"}, True)
    assert chosen_tool([], "auto") is None


def test_arguments_fit_the_schema() -> None:
    schema = {"type": "object", "properties": {
        "city": {"type": "string", "minLength": 12},
        "when": {"type": "string", "format": "date"},
        "days": {"type": "integer", "minimum": 3},
        "ratio": {"type": "number"},
        "unit": {"enum": ["c", "f"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "exact": {"type": ["null", "boolean"]},
        "nested": {"type": "object", "properties": {"x": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}},
    }}
    value = json.loads(arguments_json(schema))
    assert isinstance(value["city"], str) and len(value["city"]) >= 12
    assert value["when"] == "2026-01-01"
    assert isinstance(value["days"], int) and value["days"] >= 3
    assert isinstance(value["ratio"], float) and value["unit"] == "c"
    assert len(value["tags"]) == 2 and all(isinstance(t, str) for t in value["tags"])
    assert value["exact"] is True and isinstance(value["nested"]["x"], int)
