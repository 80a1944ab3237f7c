"""The shadow-sampling benchmark runs, writes its result file, and samples about its share."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_the_bench_writes_each_case(tmp_path: Path) -> None:
    out = tmp_path / "shadow.json"
    run = subprocess.run([sys.executable, "-m", "loadtests.shadow_bench", "--requests", "2000", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    cases = json.loads(out.read_text())["cases"]
    assert len(cases) == 3 and "p99" in run.stdout
    off, fast, standard = cases.values()
    assert off["sampled"] == 0 and standard["sampled"] == 0
    assert 40 < fast["sampled"] < 160  # 5% of 2000 is 100, sd 9.7
    assert all(case["p50_us"] > 0 for case in cases.values())
