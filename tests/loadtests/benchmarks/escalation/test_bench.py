"""The validate-then-escalate benchmark: its docs section is its committed result rendered, its
requests break at exactly the asked rate, and a short run on simulators escalates every broken
answer when the budget has room."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtests.benchmarks.escalation import bench as bench


def section(text: str) -> str:
    head, _, rest = text.partition(bench.START)
    return bench.START + rest.partition(bench.END)[0] + bench.END


def test_the_docs_section_is_the_committed_result_rendered() -> None:
    result = json.loads(bench.RESULTS.read_text())
    assert section(bench.DOCS.read_text()) == bench.render(result)


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


def test_write_docs_replaces_its_section_and_keeps_the_rest(tmp_path: Path) -> None:
    result = json.loads(bench.RESULTS.read_text())
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\nbefore\n")
    bench.write_docs(result, docs)
    bench.write_docs(result, docs)
    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\nbefore\n") and text.count(bench.START) == 1


def test_a_short_run_escalates_every_broken_answer_when_the_standard_is_idle(tmp_path: Path) -> None:
    out, docs = tmp_path / "result.json", tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n")
    assert bench.main(["--requests", "8", "--invalid-rate", "0.5", "--time-scale", "20", "--concurrency", "1", "--out", str(out),
                       "--docs", str(docs)]) == 0
    result = json.loads(out.read_text())
    roomy = result["settings"][0]
    assert result["broken"] == 4
    assert roomy["without"]["valid"] == 4 and roomy["without"]["escalated"] == 0
    assert roomy["with"]["valid"] == 8 and roomy["with"]["escalated"] == 4
    assert roomy["with"]["served_by"] == {"fast": 4, "standard": 4}
    assert roomy["with"]["cost_usd"] > roomy["without"]["cost_usd"] > 0
    assert section(docs.read_text()) == bench.render(result)
