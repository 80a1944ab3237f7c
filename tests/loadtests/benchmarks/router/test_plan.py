"""The planning benchmark's request and its measurement (a small one)."""

from __future__ import annotations

import json
import random

from loadtests.benchmarks.router import plan as plan_bench


def test_the_chat_has_a_system_prompt_its_turns_one_in_parts_and_a_last_question():
    body = json.loads(plan_bench.chat(random.Random(1), "m", 4))
    messages = body["messages"]
    assert len(messages) == 6 and messages[0]["role"] == "system" and messages[-1]["role"] == "user"
    assert isinstance(messages[3]["content"], list)


def test_a_small_measurement_reports_its_percentiles():
    result = plan_bench.measure(turns=2, repeats=20)
    assert 0 < result["p50_us"] <= result["p99_us"] <= result["max_us"]
