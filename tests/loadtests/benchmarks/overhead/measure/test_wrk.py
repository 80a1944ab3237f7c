"""wrk's result line, read exactly."""

from __future__ import annotations

import pytest

from loadtests.benchmarks.overhead.measure.wrk import parse_output

WRK_STDOUT = """\
Running 10s test @ http://127.0.0.1:8000/v1/chat/completions
  1 threads and 64 connections
Requests/sec:   2261.10
WRK_RESULT {"requests":22611,"duration_us":10000000,"bytes":1,"connect_errors":1,"read_errors":2,"write_errors":0,\
"status_errors":3,"timeouts":4,"p50_us":784,"p90_us":900,"p99_us":9407,"mean_us":812.5,"max_us":12000}
"""


def test_parse_output_reads_the_result_line_and_sums_every_error_kind() -> None:
    result = parse_output(WRK_STDOUT)
    assert result.requests == 22611
    assert result.errors == 1 + 2 + 0 + 3 + 4
    assert result.rps == pytest.approx(2261.1)
    assert (result.p50_ms, result.p99_ms) == (pytest.approx(0.784), pytest.approx(9.407))


def test_parse_output_without_a_result_line_fails_loudly() -> None:
    with pytest.raises(ValueError, match="WRK_RESULT"):
        parse_output("unable to connect to 127.0.0.1:1 Connection refused\n")
