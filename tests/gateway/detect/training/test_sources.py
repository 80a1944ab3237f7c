"""Each source's reader maps the package's own format to (task, messages, source), on a small
cache laid out as ``make detector-data`` lays it out."""

from __future__ import annotations

import json

import pytest

from gateway.detect.training import sources
from gateway.detect.training.sources import EVALS, INSPECT, load, load_all


@pytest.fixture()
def cache(tmp_path):
    def put(path, text):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")

    put(f"{INSPECT}/writingbench/benchmark_all.jsonl",
        json.dumps({"index": 1, "query": "Write a cover letter for a museum curator post."}) + "\n"
        + json.dumps({"index": 2, "query": "帮我写一个论文大纲"}) + "\n")
    put(f"{INSPECT}/abstention_bench/data/freshqa/FreshQA_v12182024.csv",
        '"Warning: do not click",,\n,,\nid,split,question,effective_year\n0,TEST,Who wrote Middlemarch?,never\n')
    put(f"{EVALS}/logiqa/logiqa.jsonl", json.dumps({"input": [
        {"role": "system", "content": "Choose the correct option."},
        {"role": "user", "content": "Passage: All cats sleep. Tom is a cat. Question: does Tom sleep?"}]}) + "\n")
    put("deepeval-4.3.1/deepeval/benchmarks/big_bench_hard/cot_prompts/navigate.txt",
        "Given a series of navigation instructions, determine the end point.\n\nQ: Turn left. Take 2 steps.\n"
        "A: Let's think step by step. No.\n\nQ: Turn around. Take 1 step.\nA: Let's think. No.")
    put("bfcl-eval-2026.3.23/bfcl_eval/data/BFCL_v4_simple_python.json", json.dumps({
        "id": "simple_0", "question": [[{"role": "user", "content": "Area of a circle of radius 3?"}]],
        "function": [{"name": "circle_area", "parameters": {}}]}) + "\n")
    put("README.md", "copied by make detector-data\n")
    return tmp_path


def test_writingbench_keeps_its_english_queries_as_chat(cache):
    found = load("writingbench", cache)
    assert [(i.task, i.messages) for i in found] == [
        ("chat", [{"role": "user", "content": "Write a cover letter for a museum curator post."}])]


def test_freshqa_reads_the_questions_below_its_sheets_preamble(cache):
    assert [i.messages[0]["content"] for i in load("freshqa", cache)] == ["Who wrote Middlemarch?"]


def test_an_evals_sample_keeps_its_system_prompt(cache):
    (item,) = load("logiqa", cache)
    assert item.task == "reasoning" and [m["role"] for m in item.messages] == ["system", "user"]


def test_bbh_gives_each_worked_example_without_its_answer(cache):
    found = [messages for sid, messages in sources.bbh_task(cache, "navigate")]
    assert [m[0]["content"] for m in found] == [
        "Given a series of navigation instructions, determine the end point.\n\nTurn left. Take 2 steps.",
        "Given a series of navigation instructions, determine the end point.\n\nTurn around. Take 1 step."]


def test_bfcl_puts_the_functions_in_the_system_prompt_as_an_agent_request(cache):
    for name in ("BFCL_v4_multiple", "BFCL_v4_live_simple", "BFCL_v4_live_multiple"):
        (cache / f"bfcl-eval-2026.3.23/bfcl_eval/data/{name}.json").write_text("")
    (item,) = load("bfcl", cache)
    assert item.task == "agent" and item.messages[0]["role"] == "system" and "circle_area" in item.messages[0]["content"]
    assert item.messages[1] == {"role": "user", "content": "Area of a circle of radius 3?"}


def test_a_source_is_capped_by_hash_order_of_its_ids(cache):
    rows = [json.dumps({"input": [{"role": "user", "content": f"Q{i}: which option?"}]}) for i in range(20)]
    (cache / EVALS / "logiqa/logiqa.jsonl").write_text("\n".join(rows) + "\n")
    every = load("logiqa", cache, cap=20)
    assert len(every) == 20 and load("logiqa", cache, cap=5) == every[:5]
    assert [i.id for i in every] != sorted(i.id for i in every)  # not file order


def test_load_all_asks_for_make_detector_data_when_the_cache_is_empty(tmp_path):
    with pytest.raises(SystemExit, match="make detector-data"):
        load_all(tmp_path)
