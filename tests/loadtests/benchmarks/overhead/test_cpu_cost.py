"""The CPU-per-request harness's arithmetic and its py-spy summary (pure parts; the run itself
needs nginx and wrk and is a benchmark, not a test)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from loadtests.benchmarks.overhead.cpu_cost import CpuCost, main, top_functions


def test_cost_per_request_and_the_ceiling_it_implies() -> None:
    cost = CpuCost("stream", requests=2000, errors=0, cpu_s=1.0, wall_rps=900.0)
    assert cost.us_per_request == pytest.approx(500.0)
    assert cost.ceiling_rps == pytest.approx(2000.0)
    empty = CpuCost("stream", requests=0, errors=0, cpu_s=1.0, wall_rps=0.0)
    assert math.isnan(empty.us_per_request) and empty.ceiling_rps == 0.0


def test_top_functions_counts_self_and_total_per_function_not_per_line(tmp_path: Path) -> None:
    raw = tmp_path / "stream.raw"
    raw.write_text(
        "main (app.py:1);handle (app.py:10);parse (body.py:3) 6\n"
        "main (app.py:1);handle (app.py:12);parse (body.py:4) 2\n"
        "main (app.py:1);handle (app.py:11) 2\n"
        "not a stack line\n"
    )
    text = top_functions(raw)
    assert text.startswith("10 samples")
    self_part, total_part = text.split("total %")
    assert "80.0  parse (body.py)" in self_part and "20.0  handle (app.py)" in self_part
    assert "100.0  handle (app.py)" in total_part and "100.0  main (app.py)" in total_part


def test_unknown_mode_is_refused_with_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--modes", "stream,bogus"])
    assert exit_info.value.code == 2
    assert "unknown mode(s) ['bogus']" in capsys.readouterr().err
