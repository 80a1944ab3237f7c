"""Scoring a pair of live answers to the same request (online parity's shadow checks): the
standard variant's and the candidate's. Live traffic has no expected answer, so each side is
scored on what can be checked by itself (a well-formed number, a tool call valid for the offered
schema, code passing the tests the prompt carries), and the candidate must also match the
standard where the standard's answer is well-formed. Open answers are scored by agreement with
the standard's (the offline chat rule: token-set F1 >= 0.5; the standard scores 1).

Scores are 0 or 1; the loss of a pair is standard - candidate, in {-1, 0, 1}."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from quantize.evals.checking.answers import code_block, final_number, first_number, message_text, parse_json_object, tool_call
from quantize.evals.checking.sandbox import Sandbox
from quantize.evals.checking.similarity import token_set_f1
from quantize.evals.tasks.chat import THRESHOLD
from quantize.evals.tasks.long_context import CODE

# A prompt's example written as ``name(args) == result`` on its own line is a test the code must pass.
_EXAMPLE = re.compile(r"^\s*([A-Za-z_]\w*\(.*\)\s*==\s*.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """Each side's score (0 or 1), how they were measured, and a short detail (no answer text)."""

    standard: float
    candidate: float
    measure: str
    detail: str = ""


def judge_pair(task: str, request: Mapping[str, Any], standard: Mapping[str, Any], candidate: Mapping[str, Any],
               sandbox: Callable[[], Sandbox] | None = None) -> PairOutcome:
    """Score two chat completions answering ``request`` (an OpenAI chat body) for task type
    ``task``. ``sandbox``: builds the coding sandbox when a request carries tests (None: such
    requests are scored by agreement)."""
    if request.get("tools"):
        return _tool_calls(request, standard, candidate)
    if task == "coding":
        tests = [f"assert {t}" for t in _EXAMPLE.findall(_last_user(request))]
        if tests and sandbox is not None:
            return _tested(sandbox(), tests, standard, candidate)
    if task == "extraction":
        return _numbers(first_number, standard, candidate, "number (first)")
    if task == "reasoning":
        return _numbers(final_number, standard, candidate, "number (final)")
    if task == "long-context":
        return _codes(standard, candidate)
    return agreement(standard, candidate)


def agreement(standard: Mapping[str, Any], candidate: Mapping[str, Any]) -> PairOutcome:
    f1 = token_set_f1(message_text(dict(candidate)), message_text(dict(standard)))
    return PairOutcome(1.0, float(f1 >= THRESHOLD), "agreement", f"F1 {f1:.2f}")


def _paired(standard_ok: bool, candidate_ok: bool, same: bool, measure: str, detail: str) -> PairOutcome:
    """A well-formed standard answer is the reference: the candidate must be well-formed and the same."""
    candidate_score = candidate_ok and (same or not standard_ok)
    return PairOutcome(float(standard_ok), float(candidate_score), measure, detail)


def _numbers(read: Callable[[str], float | None], standard: Mapping[str, Any], candidate: Mapping[str, Any],
             measure: str) -> PairOutcome:
    a, b = read(message_text(dict(standard))), read(message_text(dict(candidate)))
    same = a is not None and b is not None and math.isclose(a, b, rel_tol=1e-3, abs_tol=0.011)
    return _paired(a is not None, b is not None, same, measure, "same number" if same else "numbers differ")


def _codes(standard: Mapping[str, Any], candidate: Mapping[str, Any]) -> PairOutcome:
    a, b = CODE.search(message_text(dict(standard))), CODE.search(message_text(dict(candidate)))
    same = a is not None and b is not None and a.group(0) == b.group(0)
    return _paired(a is not None, b is not None, same, "code", "same code" if same else "codes differ")


def _tested(sandbox: Sandbox, tests: list[str], standard: Mapping[str, Any], candidate: Mapping[str, Any]) -> PairOutcome:
    results = [sandbox.run(code_block(message_text(dict(side))), tests) for side in (standard, candidate)]
    detail = f"standard {results[0].status}, candidate {results[1].status} ({len(tests)} tests)"
    return PairOutcome(float(results[0].ok), float(results[1].ok), "sandbox", detail)


def _tool_calls(request: Mapping[str, Any], standard: Mapping[str, Any], candidate: Mapping[str, Any]) -> PairOutcome:
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {}
               for t in request.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)}
    a, a_problem = _valid_call(standard, schemas)
    b, b_problem = _valid_call(candidate, schemas)
    same = a is not None and b is not None and _canonical(a) == _canonical(b)
    detail = b_problem or a_problem or ("same call" if same else "calls differ")
    return _paired(a is not None, b is not None, same, "tool-call", detail)


def _valid_call(response: Mapping[str, Any], schemas: Mapping[str, Any]) -> tuple[tuple[str, dict[str, Any]] | None, str]:
    """(name, arguments) of the first tool call when it names an offered tool and its arguments
    are a JSON object valid for that tool's schema; else None and what is wrong."""
    call = tool_call(dict(response))
    if call is None:
        return None, "no tool call"
    if call.name not in schemas:
        return None, "unknown tool"
    arguments = parse_json_object(call.arguments_text)
    if arguments is None:
        return None, "arguments are not a JSON object"
    try:
        jsonschema.validate(arguments, schemas[call.name])
    except jsonschema.ValidationError:
        return None, "arguments fail the tool's schema"
    except jsonschema.SchemaError:
        return None, "the tool's schema is invalid"
    return (call.name, arguments), ""


def _canonical(call: tuple[str, dict[str, Any]]) -> str:
    name, arguments = call
    folded = {k: v.strip().lower() if isinstance(v, str) else v for k, v in arguments.items()}
    return name + json.dumps(folded, sort_keys=True)


def _last_user(request: Mapping[str, Any]) -> str:
    users = [m for m in request.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else ""
