"""A run's record and its JSON file."""

from __future__ import annotations

from pathlib import Path

from loadtests.benchmarks.overhead.measure.phases import Measurement
from loadtests.benchmarks.overhead.stack.launch import Unavailable
from tests.loadtests.benchmarks.overhead.report.measurements import m, wrk


def test_a_run_record_survives_its_json_file_whole(tmp_path: Path) -> None:
    from loadtests.benchmarks.overhead.measure.phases import PhasePlan
    from loadtests.benchmarks.overhead.measure.run import RunResult
    from loadtests.benchmarks.overhead.report.results import Host, RunRecord, read, write

    result = RunResult((m("direct", "non-stream", 40, 20000), Measurement("duet", "stream", wrk(800, 460), wrk(900, 400), None)),
                       (Unavailable("litellm", "no venv"),), {"non-stream": wrk(30, 40000)}, {"nginx": "1.22.1"},
                       {"cpu0": 0.01, "cpu1": 0.5})
    record = RunRecord(result, "make bench-overhead", PhasePlan(1.0, 2.0, 3.0, 8, 0), 1, "2026-12-04 12:00 UTC",
                       Host(2, "Some CPU", "6.1.0", "avx512"))
    write(record, tmp_path / "overhead.json")
    assert read(tmp_path / "overhead.json") == record
