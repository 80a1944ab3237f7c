import json

import pytest

from gateway.cost import Price
from loadtests.benchmarks.slo.summary import load_records, run_summary
from loadtests.scoring.report import comparison_markdown, run_markdown
from loadtests.scoring.slo import RequestRecord, Slo

PRICES = {"standard": Price(1.0, 2.0), "fast": Price(0.5, 1.0)}
SLOS = {"chat": Slo(ttft_ms=1000, tpot_ms=50), "coding": Slo(ttft_ms=500, tpot_ms=50)}


def record(task, variant, ttft=0.1, ok=True):
    return RequestRecord(task=task, variant=variant, started_s=1.0, ok=ok, ttft_s=ttft if ok else None, latency_s=1.0,
                         input_tokens=1000, output_tokens=101 if ok else 0)


def test_run_summary_counts_attainment_cost_and_mix_per_task():
    records = [record("chat", "fast"), record("chat", "standard", ttft=2.0), record("coding", "fast"),
               record("coding", "unknown", ok=False)]
    summary = run_summary(records, SLOS, PRICES, duration_s=2.0, meta={"policy": "p"})
    overall = summary["overall"]
    assert (overall["requests"], overall["met_slo"], overall["failed"]) == (4, 2, 1)
    assert overall["goodput_rps"] == 1.0
    # fast: 1000 x 0.5 + 101 x 1.0 per 1M; standard: 1000 x 1 + 101 x 2
    assert overall["cost_usd"] == pytest.approx((2 * 601 + 1202) / 1e6)
    assert overall["variant_mix"] == {"fast": pytest.approx(2 / 3, abs=1e-4), "standard": pytest.approx(1 / 3, abs=1e-4)}
    assert summary["tasks"]["chat"]["attainment"] == 0.5
    assert summary["tasks"]["coding"]["failed"] == 1
    assert summary["variants"]["fast"]["ttft_ms"]["p50"] == 100.0


def test_records_are_read_back_in_model_time(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"task": "chat", "variant": "fast", "started_s": 1.0, "ok": True, "ttft_s": 0.1,
                                "latency_s": 1.0, "input_tokens": 5, "output_tokens": 10, "itl_s": [0.1], "lag_s": 0.0,
                                "error": "", "replica": "r"}) + "\n")
    [loaded] = load_records(path, time_scale=2.0)
    assert (loaded.ttft_s, loaded.latency_s, loaded.itl_s) == (0.2, 2.0, (0.2,))


def test_markdown_tables_name_every_task_and_policy():
    records = [record("chat", "fast"), record("coding", "standard")]
    meta = {"policy": "duet", "rate_scale": 1.0, "replicas": "smoke", "traces": ["code", "conv"], "trace_start_s": 0,
            "duration_model_s": 2.0, "offered_rps": 1.0, "time_scale": 1.0, "attribution": "Azure"}
    text = run_markdown(run_summary(records, SLOS, PRICES, 2.0, meta))
    assert "| chat | 1000 / 50 |" in text and "| overall |" in text
    rows = [{"policy": "duet", "rate_scale": 1.0, "offered_rps": 4.0, "attainment": 0.95, "goodput_rps": 3.8,
             "cost_per_1k_requests_usd": 0.5, "fast_share": 0.7, "failed": 0, "ttft_p90_ms": 100.0, "tpot_p90_ms": 20.0,
             "attainment_chat": 0.9}]
    table = comparison_markdown(rows, {"duet": 4.0, "always-standard": None})
    assert "| duet | 4.00 | 95.0% | 90.0% | 3.80 |" in table
    assert "below the lowest rate tried" in table


def test_a_good_request_met_its_budget_on_a_variant_parity_allows_for_its_task():
    records = [record("chat", "fast"), record("coding", "fast"), record("coding", "standard"),
               record("coding", "fast", ttft=2.0), record("chat", "unfinished", ok=False)]
    parity = {"standard": None, "fast": frozenset({"chat"})}
    overall = run_summary(records, SLOS, PRICES, duration_s=1.0, meta={}, parity=parity)["overall"]
    # coding on fast is a quality miss whether or not it met its budget; a failed request is none
    assert (overall["met_slo"], overall["good_requests"], overall["quality_misses"]) == (3, 2, 2)
    assert overall["good_fraction"] == 0.4
    assert overall["errors"] == {"no token streamed": 1}
    assert run_summary(records, SLOS, PRICES, 1.0, {})["overall"]["good_requests"] == 3  # no parity: all allowed
