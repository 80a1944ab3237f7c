"""Scoring pairs of live answers: each task's structured measure, the sandbox where the prompt
carries tests, and agreement for open chat. The suite's reference and wrong answers stand in for
what the two variants say."""

from __future__ import annotations

import json

import pytest

from quantize.evals.checking.sandbox import Limits, Sandbox
from quantize.evals.items import ModelAnswer
from quantize.evals.online import judge_pair
from quantize.evals.suite import task_types

SANDBOX = Sandbox(Limits(wall_s=5.0, cpu_s=2))
TYPES = task_types(SANDBOX)


def completion(answer: ModelAnswer) -> dict:
    return answer.as_completion()


@pytest.mark.parametrize("task", ["extraction", "reasoning", "long-context", "agent", "chat", "coding"])
def test_the_same_right_answer_scores_both_sides_and_a_wrong_one_loses(task):
    kind = TYPES[task]
    item = kind.generate(seed=2, n=1)[0]
    right, wrong = completion(kind.reference_answer(item)), completion(kind.wrong_answer(item))
    same = judge_pair(task, item.request, right, right, sandbox=lambda: SANDBOX)
    worse = judge_pair(task, item.request, right, wrong, sandbox=lambda: SANDBOX)
    assert (same.standard, same.candidate) == (1.0, 1.0), same
    assert (worse.standard, worse.candidate) == (1.0, 0.0), worse
    expected = {"extraction": "number (first)", "reasoning": "number (final)", "long-context": "code",
                "agent": "tool-call", "chat": "agreement", "coding": "sandbox"}[task]
    assert same.measure == expected


def test_a_tool_call_must_be_offered_and_valid_for_its_schema():
    kind = TYPES["agent"]
    item = kind.generate(seed=4, n=1)[0]
    right = kind.reference_answer(item)
    bad_args = ModelAnswer(tool_name=right.tool_name, tool_arguments={"nonsense": 1})
    unknown = ModelAnswer(tool_name="launch_rocket", tool_arguments={})
    for answer, detail in ((bad_args, "schema"), (unknown, "unknown tool")):
        outcome = judge_pair("agent", item.request, completion(right), completion(answer))
        assert (outcome.standard, outcome.candidate) == (1.0, 0.0) and detail in outcome.detail
    # A standard that is itself invalid is no reference: a valid candidate then wins the pair.
    outcome = judge_pair("agent", item.request, completion(unknown), completion(right))
    assert (outcome.standard, outcome.candidate) == (0.0, 1.0)


def test_arguments_that_are_not_json_fail_the_call():
    kind = TYPES["agent"]
    item = kind.generate(seed=4, n=1)[0]
    right = completion(kind.reference_answer(item))
    broken = json.loads(json.dumps(right))
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": "Par'
    assert judge_pair("agent", item.request, right, broken).candidate == 0.0


def test_coding_without_tests_in_the_prompt_is_scored_by_agreement():
    request = {"messages": [{"role": "user", "content": "Write a function that reverses a string."}]}
    code = completion(ModelAnswer("```python\ndef rev(s):\n    return s[::-1]\n```"))
    other = completion(ModelAnswer("I cannot write code today, sorry about that."))
    outcome = judge_pair("coding", request, code, other, sandbox=lambda: SANDBOX)
    assert outcome.measure == "agreement" and outcome.candidate == 0.0


def test_no_text_of_the_answers_in_the_detail():
    kind = TYPES["chat"]
    item = kind.generate(seed=1, n=1)[0]
    right, wrong = kind.reference_answer(item), kind.wrong_answer(item)
    outcome = judge_pair("chat", item.request, completion(right), completion(wrong))
    assert right.text not in outcome.detail and wrong.text not in outcome.detail
