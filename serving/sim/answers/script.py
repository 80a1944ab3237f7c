"""Scripted answers (``duet sim --answers FILE``): rules that decide WHAT the simulated model
says, while the engine still decides how long it takes and how many tokens it counts.

The file (YAML or JSON) is a list of rules, or ``{"rules": [...]}``. A rule matches the last
user message (or a tool's result sent after it, so an agent's loop can be scripted), exactly (``equals``) or by
``re.search`` (``match``), and answers with ``text`` or
a ``tool_call`` (``{"name": ..., "arguments": {...}}``, used when the request offers tools; arguments
given as a string are sent verbatim, even when they are not valid JSON).
The first matching rule wins (exact rules are looked up first); unmatched requests get the
simulator's usual generated words. Parity tests use it to make one endpoint wrong on purpose.

    rules:
      - {equals: "What is 2 + 2?", text: "Answer: 4"}
      - {match: "weather in (Paris|Oslo)", tool_call: {name: get_weather, arguments: {city: Paris}}}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class ScriptError(ValueError):
    """The answers file cannot be used; the message names the rule."""


@dataclass(frozen=True, slots=True)
class ScriptedAnswer:
    text: str = ""
    tool_name: str | None = None
    tool_arguments: str = "{}"  # JSON text, spaced as vLLM re-serialises it


@dataclass(frozen=True, slots=True)
class AnswerScript:
    exact: dict[str, ScriptedAnswer]
    patterns: tuple[tuple[re.Pattern[str], ScriptedAnswer], ...]

    def answer_for(self, last_user_message: str) -> ScriptedAnswer | None:
        found = self.exact.get(last_user_message)
        if found is not None:
            return found
        return next((answer for pattern, answer in self.patterns if pattern.search(last_user_message)), None)


def load_script(path: str | Path) -> AnswerScript:
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ScriptError(f"{path}: cannot read answers: {exc}") from exc
    rules = raw.get("rules") if isinstance(raw, dict) else raw
    if not isinstance(rules, list):
        raise ScriptError(f"{path}: expected a list of rules (or {{rules: [...]}})")
    exact: dict[str, ScriptedAnswer] = {}
    patterns = []
    for i, rule in enumerate(rules):
        where = f"{path}: rules[{i}]"
        if not isinstance(rule, dict) or ("equals" in rule) == ("match" in rule):
            raise ScriptError(f"{where}: a mapping with exactly one of 'equals' or 'match'")
        answer = _answer(rule, where)
        if "equals" in rule:
            exact.setdefault(str(rule["equals"]), answer)
        else:
            try:
                patterns.append((re.compile(str(rule["match"])), answer))
            except re.error as exc:
                raise ScriptError(f"{where}.match: {exc}") from exc
    return AnswerScript(exact, tuple(patterns))


def _answer(rule: dict[str, Any], where: str) -> ScriptedAnswer:
    unknown = set(rule) - {"equals", "match", "text", "tool_call"}
    if unknown:
        raise ScriptError(f"{where}: unknown key(s) {sorted(unknown)}")
    if ("text" in rule) == ("tool_call" in rule):
        raise ScriptError(f"{where}: exactly one of 'text' or 'tool_call'")
    if "text" in rule:
        return ScriptedAnswer(text=str(rule["text"]))
    call = rule["tool_call"]
    arguments = call.get("arguments", {}) if isinstance(call, dict) else None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not isinstance(arguments, dict | str):
        raise ScriptError(f"{where}.tool_call: {{name: str, arguments: mapping or str}}")
    # A string is sent verbatim: a model that writes broken JSON (the gateway's contract checks).
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ScriptedAnswer(tool_name=call["name"], tool_arguments=text)
