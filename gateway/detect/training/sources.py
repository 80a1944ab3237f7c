"""Labelled prompts from public benchmarks, read from what ``make detector-data`` extracted
(``gateway.detect.training.packages``): each source's items as (task, messages, source).

A source is one benchmark by one set of authors (DATA.md says whose, and under which license);
the leave-one-source-out evaluation holds each out whole. Labels follow the task types' meaning
in docs/routing.md: writing, advice and knowledge questions are ``chat``; logic puzzles,
deduction and word problems ``reasoning``; SQL, regex and CSS questions ``coding``; entities,
fields and spans pulled from a given text ``extraction``; a request with functions to call
``agent``. Messages are kept as the benchmark wrote them (system prompt included); a BFCL
question's functions, which a client would send as ``tools`` (where the gateway's ``has_tools``
rule decides before the detector), are given in the system prompt as BFCL's prompting mode does.
A source's items are capped at ``CAP`` (by hash order of their ids), so no benchmark outweighs the
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

from gateway.detect.training.packages import CACHE

Messages = list[dict[str, Any]]
CAP = 600
EVALS = "evals-3.0.1.post1/evals/registry/data"
INSPECT = "inspect-evals-0.26.0/inspect_evals"
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
    folder = root / "bfcl-eval-2026.3.23/bfcl_eval/data"
    for name in ("BFCL_v4_simple_python", "BFCL_v4_multiple", "BFCL_v4_live_simple", "BFCL_v4_live_multiple"):
        for row in _jsonl(folder / f"{name}.json"):
            system = ("You can call the following functions. Here is the list of functions in JSON format:\n"
                      + json.dumps(row["function"]))
            turns = [m for m in row["question"][0] if m.get("role") in ("user", "system")]
            yield row["id"], [{"role": "system", "content": system}, *turns]


# name -> (task, reader). Names are the benchmark's, prefixed by the package that carries it.
SOURCES: dict[str, tuple[str, Callable[[Path], Iterator[tuple[str, Messages]]]]] = {
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
}


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def load(name: str, root: Path = CACHE, cap: int = CAP) -> list[Labelled]:
    """One source's items, at most ``cap`` (the first by hash order of id), empty turns dropped."""
    task, read = SOURCES[name]
    items = [Labelled(f"{name}/{sid}", task, name, messages) for sid, messages in read(root)
             if any(re.search(r"\w", str(m.get("content") or "")) for m in messages)]
    return sorted(items, key=lambda s: _unit(s.id))[:cap]


def load_all(root: Path = CACHE, cap: int = CAP) -> list[Labelled]:
    if not (root / "README.md").exists():
        raise SystemExit(f"no prompts in {root}: run `make detector-data`")
    return [item for name in SOURCES for item in load(name, root, cap)]
