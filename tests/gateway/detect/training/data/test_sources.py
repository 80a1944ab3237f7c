"""Each source's reader maps the package's own format to (task, messages, source), on a small
cache laid out as ``make detector-data`` lays it out."""

from __future__ import annotations

import json

import pytest

from gateway.detect.training.data import sources
from gateway.detect.training.data.sources import EVALS, INSPECT, load, load_all


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
    for name in ("BFCL_v4_multiple", "BFCL_v4_live_simple", "BFCL_v4_live_multiple", "BFCL_v4_multi_turn_base",
                 "possible_answer/BFCL_v4_multi_turn_base"):
        (cache / f"{sources.BFCL}/{name}.json").parent.mkdir(parents=True, exist_ok=True)
        (cache / f"{sources.BFCL}/{name}.json").write_text("")
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


def test_load_all_asks_for_make_detector_data_when_the_cache_predates_a_source(cache):
    with pytest.raises(SystemExit, match="is not in .*make detector-data"):
        load_all(cache)


def test_mt_bench_gives_both_turns_labelled_by_category_with_an_empty_answer_between(cache):
    put = cache / sources.MT_BENCH
    put.parent.mkdir(parents=True)
    put.write_text(json.dumps({"question_id": 104, "category": "reasoning", "turns": [
        "David has three sisters. Each of them has one brother. How many brothers does David have?", "Why?"]}) + "\n"
        + json.dumps({"question_id": 91, "category": "roleplay", "turns": ["Pretend to be Elon Musk.", "Teach me to dance."]})
        + "\n")
    found = {i.id: i for i in load("mt-bench", cache)}
    assert {i: found[i].task for i in found} == {
        "mt-bench/reasoning/104/1": "reasoning", "mt-bench/reasoning/104/2": "reasoning",
        "mt-bench/roleplay/91/1": "chat", "mt-bench/roleplay/91/2": "chat"}
    assert found["mt-bench/reasoning/104/2"].messages == [
        {"role": "user", "content": "David has three sisters. Each of them has one brother. How many brothers does David have?"},
        {"role": "assistant", "content": ""}, {"role": "user", "content": "Why?"}]


def test_every_mt_bench_category_has_a_task():
    assert set(sources.MT_BENCH_TASKS.values()) == {"chat", "reasoning", "coding", "extraction"}
    assert len(sources.MT_BENCH_TASKS) == 8


def test_longbench_write_asks_are_chat(cache):
    put = cache / sources.LONGBENCH_WRITE
    put.parent.mkdir(parents=True)
    put.write_text(json.dumps({"prompt": "Write a 100-word thank-you email.", "type": "Functional Writing"}) + "\n")
    assert [(i.task, i.messages) for i in load("longbench-write", cache)] == [
        ("chat", [{"role": "user", "content": "Write a 100-word thank-you email."}])]


def test_swe_lancer_asks_to_fix_each_individual_contributors_issue_and_skips_the_managers(cache):
    put = cache / INSPECT / "swe_lancer/data/all_swelancer_tasks.csv"
    put.parent.mkdir(parents=True)
    put.write_text('question_id,variant,title,description\n1_1,ic_swe,"Zip hint differs","Expected: same hint\n"\n'
                   '2_1,swe_manager,Choose a proposal,"Proposal A or B"\n', encoding="utf-8")
    (item,) = load("swe-lancer", cache)
    assert item.task == "coding" and item.id == "swe-lancer/1_1"
    assert item.messages[0]["content"].endswith("fixing the following issue:\n\n<title>\nZip hint differs\n</title>"
                                                "\n\n<description>\nExpected: same hint\n</description>")


def test_agentbench_os_tasks_come_with_a_bash_tool_once_each(cache):
    folder = cache / INSPECT / "agent_bench/data"
    folder.mkdir(parents=True)
    task = {"description": "Tell me how many times Alice sold a stock in /home/agent/stock.log."}
    (folder / "agent_bench_os.json").write_text(json.dumps([task]))
    (folder / "agent_bench_os_test.json").write_text(json.dumps([task, {"description": "Find the SUID hole."}]))
    found = load("agentbench-os", cache)
    assert sorted(i.messages[1]["content"] for i in found) == ["Find the SUID hole.", task["description"]]
    assert all(i.task == "agent" and '"name": "bash"' in i.messages[0]["content"] for i in found)


def test_a_mind2web_step_is_its_three_seeact_prompts_with_the_models_analysis_left_empty(cache):
    put = cache / INSPECT / "mind2web_sc/data/seeact/sample_labeled_all.json"
    put.parent.mkdir(parents=True)
    step = {"action_uid": "a1", "prompt": ["Imitate a human navigating the web.",
                                           "Task: sort used cars by price.\n\nPrevious Actions:\n[div] Audi -> CLICK",
                                           "(Multichoice Question)\nA. <button> Sort"]}
    put.write_text(json.dumps([step, {**step, "user_info": {"age": 45}}]))
    (item,) = load("mind2web-seeact", cache)
    assert item.task == "agent" and [m["role"] for m in item.messages] == ["system", "user", "assistant", "user"]
    assert item.messages[2]["content"] == "" and item.messages[3]["content"].startswith("(Multichoice")


def test_a_grouped_evals_source_reads_each_of_its_files(cache):
    for name in ("count_token_freq_dna/samples.jsonl", "last_word_nth/samples.jsonl"):
        put = cache / EVALS / name
        put.parent.mkdir(parents=True)
        put.write_text(json.dumps({"input": [{"role": "user", "content": f"Count in {name}"}]}) + "\n")
    for name in ("find-letter/samples.jsonl", "countries/samples.jsonl",
                 "research-question-extraction/research-question-extraction-samples.jsonl",
                 "utility_price_parsing/samples.jsonl", "monthly_metric_comparison/samples.jsonl"):
        (cache / EVALS / name).parent.mkdir(parents=True)
        (cache / EVALS / name).write_text("")
    found = load("evals-counting-tables", cache)
    assert sorted(i.id for i in found) == ["evals-counting-tables/count_token_freq_dna/samples.jsonl/0",
                                           "evals-counting-tables/last_word_nth/samples.jsonl/0"]
    assert {i.task for i in found} == {"extraction"}


def test_a_bfcl_conversations_later_turns_follow_the_calls_that_answered_the_earlier_ones(tmp_path):
    folder = tmp_path / sources.BFCL
    (folder / "possible_answer").mkdir(parents=True)
    (folder / "multi_turn_func_doc").mkdir()
    (folder / "multi_turn_func_doc/math_api.json").write_text(json.dumps({"name": "add", "parameters": {}}) + "\n")
    (folder / "BFCL_v4_multi_turn_base.json").write_text(json.dumps({
        "id": "multi_turn_base_7", "involved_classes": ["MathAPI"],
        "question": [[{"role": "user", "content": "Add 2 and 3."}], [{"role": "user", "content": "Now add 4 to that."}]]})
        + "\n")
    (folder / "possible_answer/BFCL_v4_multi_turn_base.json").write_text(json.dumps({
        "id": "multi_turn_base_7", "ground_truth": [["add(a=2, b=3)"], ["add(a=5, b=4)"]]}) + "\n")
    ((sid, messages),) = sources.bfcl_multi_turn(tmp_path)
    assert sid == "multi_turn_base_7/1" and '"add"' in messages[0]["content"]
    assert messages[1:] == [{"role": "user", "content": "Add 2 and 3."}, {"role": "assistant", "content": "[add(a=2, b=3)]"},
                            {"role": "user", "content": "Now add 4 to that."}]


def test_every_source_labels_with_a_task_type_the_detector_knows():
    known = {"chat", "coding", "reasoning", "extraction", "long-context", "agent"}
    labels = {label for label, _ in sources.SOURCES.values() if isinstance(label, str)}
    assert labels <= known and set(sources.MT_BENCH_TASKS.values()) <= known


def test_text2sql_data_asks_are_db_gpt_hubs_schema_and_question_as_coding(cache):
    put = cache / sources.TEXT2SQL
    put.parent.mkdir(parents=True)
    put.write_text(json.dumps([{"db_id": "database", "instruction": "CREATE TABLE city (\ncity_name\n)\n\n-- which "
                                "cities are in texas\nSELECT", "input": "", "output": "SELECT city_name FROM city"}]))
    (item,) = load("text2sql-data", cache)
    assert item.task == "coding" and item.messages == [
        {"role": "user", "content": "CREATE TABLE city (\ncity_name\n)\n\n-- which cities are in texas\nSELECT"}]


def test_ifbench_prompts_are_chat(cache):
    put = cache / sources.IFBENCH
    put.parent.mkdir(parents=True)
    put.write_text(json.dumps({"key": "7", "prompt": "Plan a week in Lisbon. Use no commas.", "instruction_id_list": []})
                   + "\n")
    assert [(i.id, i.task) for i in load("ifbench", cache)] == [("ifbench/7", "chat")]


def test_squad_asks_each_paragraphs_first_answerable_question_in_rulers_prompt(cache):
    put = cache / sources.SQUAD
    put.parent.mkdir(parents=True)
    paragraph = {"context": "The Normans gave their name to Normandy.", "qas": [
        {"id": "q0", "question": "Who ruled?", "is_impossible": True, "answers": []},
        {"id": "q1", "question": "Who gave their name to Normandy? ", "is_impossible": False, "answers": [{"text": "x"}]},
        {"id": "q2", "question": "What region?", "is_impossible": False, "answers": [{"text": "y"}]}]}
    put.write_text(json.dumps({"data": [{"title": "Normans", "paragraphs": [paragraph]}]}))
    (item,) = load("squad", cache)
    assert item.id == "squad/q1" and item.task == "extraction"
    text = item.messages[0]["content"]
    assert "Document 1:\nThe Normans gave their name to Normandy." in text
    assert text.endswith("Question: Who gave their name to Normandy?")
