"""The docs section names the Responses API rows and their goals."""

from __future__ import annotations

from loadtests.benchmarks.overhead.stack.canned import canned_responses
from tests.loadtests.benchmarks.overhead.report.measurements import m, wrk


def test_the_docs_section_names_the_responses_rows_and_their_goals() -> None:
    from loadtests.benchmarks.overhead.measure.modes import ALL_MODES
    from loadtests.benchmarks.overhead.measure.phases import PhasePlan
    from loadtests.benchmarks.overhead.measure.run import RunResult
    from loadtests.benchmarks.overhead.report.document import section
    from loadtests.benchmarks.overhead.report.results import Host, RunRecord

    runs = tuple(m(gateway, mode.name, 500, 1000) for gateway in ("direct", "duet", "vllm-router") for mode in ALL_MODES)
    result = RunResult(runs, (), {mode.name: wrk(100, 5000) for mode in ALL_MODES}, {"nginx": "1.22.1"},
                       {"cpu0": 0.01, "cpu1": 0.02})
    host = Host(2, "Some CPU", "6.1.0", "avx2")
    text = section(RunRecord(result, "make bench-overhead", PhasePlan(), 1, "2026-12-04 12:00 UTC", host))
    assert "| duet | responses-stream | 1000 |" in text and "`POST /v1/responses`" in text
    assert "duet responses rps / vllm-router's: 1.00 (goal >= 0.5) — met" in text
    assert f"{len(canned_responses().responses_sse_events)} SSE events" in text
