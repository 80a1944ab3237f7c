"""The shadow-sampling benchmark runs, writes its result file and samples about its share; its
docs section is the committed result file, rendered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loadtests.benchmarks.router import shadow as shadow_bench


def test_the_bench_writes_each_case(tmp_path: Path) -> None:
    out = tmp_path / "shadow.json"
    run = subprocess.run([sys.executable, "-m", "loadtests.benchmarks.router.shadow", "--requests", "2000", "--out", str(out),
                          "--no-docs"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text())
    cases = result["cases"]
    assert len(cases) == 3 and "p99" in run.stdout
    off, fast, standard = cases.values()
    assert off["sampled"] == 0 and standard["sampled"] == 0
    assert 40 < fast["sampled"] < 160  # 5% of 2000 is 100, sd 9.7
    assert all(0 < case["p50_us"] <= case["p99_us"] <= case["max_us"] for case in cases.values())
    assert result["hardware_class"] and len(result["load_avg"]) == 2 and result["requests"] == 2000


def test_the_docs_section_is_rendered_from_the_committed_results() -> None:
    result = json.loads(shadow_bench.RESULTS.read_text())
    assert shadow_bench.docs_section(result) in shadow_bench.DOCS.read_text()


def test_the_section_goes_after_the_overhead_report_and_is_replaced_in_place(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text(f"# Benchmarks\n\n{shadow_bench.AFTER}\n\n## Next\n")
    shadow_bench.write_docs(f"{shadow_bench.START}\nfirst\n{shadow_bench.END}", docs)
    shadow_bench.write_docs(f"{shadow_bench.START}\nsecond\n{shadow_bench.END}", docs)
    text = docs.read_text()
    assert "first" not in text and text.index(shadow_bench.AFTER) < text.index("second") < text.index("## Next")
    assert text.count(shadow_bench.HEADING) == 1
