"""The shadow-sampling benchmark runs, writes its result file and samples about its share (its docs
section is checked with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_the_bench_writes_each_case(tmp_path: Path) -> None:
    out = tmp_path / "shadow.json"
    run = subprocess.run([sys.executable, "-m", "loadtests.benchmarks.router.shadow", "--requests", "2000", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text())
    cases = result["cases"]
    assert len(cases) == 3 and "p99" in run.stdout
    off, fast, standard = cases.values()
    assert off["sampled"] == 0 and standard["sampled"] == 0
    assert 40 < fast["sampled"] < 160  # 5% of 2000 is 100, sd 9.7
    assert all(0 < case["p50_us"] <= case["p99_us"] <= case["max_us"] for case in cases.values())
    assert result["hardware_class"] and len(result["load_avg"]) == 2 and result["requests"] == 2000
