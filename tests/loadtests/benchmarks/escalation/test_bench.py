"""The validate-then-escalate benchmark: its requests break at exactly the asked rate, and a short
run on simulators escalates every broken answer when the budget has room (its docs section is
checked with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtests.benchmarks.escalation import bench as bench


def test_the_broken_share_is_exact_and_seeded() -> None:
    work = bench.items(100, 0.2, seed=3)
    assert sum(i.broken for i in work) == 20
    assert [i.broken for i in work] == [i.broken for i in bench.items(100, 0.2, seed=3)]
    assert [i.broken for i in work] != [i.broken for i in bench.items(100, 0.2, seed=4)]


def test_only_the_fast_script_breaks_the_broken_items() -> None:
    work = bench.items(10, 0.5, seed=0)
    for broken, rules in ((False, bench.script(work, False)["rules"]), (True, bench.script(work, True)["rules"])):
        for item, rule in zip(work, rules, strict=True):
            arguments = rule["tool_call"]["arguments"]
            assert isinstance(arguments, str) == (broken and item.broken)


@pytest.mark.parametrize(("message", "keeps"), [
    ({"tool_calls": [{"function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}, True),
    ({"tool_calls": [{"function": {"name": "get_weather", "arguments": '{"city": "Oslo"'}}]}, False),
    ({"tool_calls": [{"function": {"name": "get_weather", "arguments": '{"town": "Oslo"}'}}]}, False),
    ({"content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}\n</tool_call>'}, False),
])
def test_what_keeps_the_contract(message: dict[str, object], keeps: bool) -> None:
    assert bench.keeps_contract({"choices": [{"message": message}]}) is keeps


def test_a_short_run_escalates_every_broken_answer_when_the_standard_is_idle(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    assert bench.main(["--requests", "8", "--invalid-rate", "0.5", "--time-scale", "20", "--concurrency", "1",
                       "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    roomy = result["settings"][0]
    assert result["broken"] == 4
    assert roomy["without"]["valid"] == 4 and roomy["without"]["escalated"] == 0
    assert roomy["with"]["valid"] == 8 and roomy["with"]["escalated"] == 4
    assert roomy["with"]["served_by"] == {"fast": 4, "standard": 4}
    assert roomy["with"]["cost_usd"] > roomy["without"]["cost_usd"] > 0
    assert "## Validate, then escalate (tool calls)" in bench.render(result)
