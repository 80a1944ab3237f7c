"""vLLM's spec-decode counters read from /metrics text: summed over engines, a difference of two
scrapes, acceptance only where something was drafted, None where none is exported."""

from __future__ import annotations

import pytest

from serving.calibration.spec_counters import SpecCounters, parse_spec_counters

SCRAPE = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="smollm2 fast"} 10.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="smollm2 fast"} 2.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 48.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 30.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 11.0
vllm:num_requests_running{engine="0",model_name="m"} 1.0
"""


def test_counters_are_summed_over_engines_and_the_per_position_ones_left_out() -> None:
    assert parse_spec_counters(SCRAPE) == SpecCounters(drafts=12.0, draft_tokens=48.0, accepted_tokens=30.0)


def test_acceptance_is_of_the_tokens_drafted_between_two_scrapes() -> None:
    before = SpecCounters(2.0, 8.0, 4.0)
    assert SpecCounters(12.0, 48.0, 30.0).since(before).acceptance() == pytest.approx(26 / 40)
    assert before.since(before).acceptance() is None


def test_a_replica_without_the_counters_has_none() -> None:
    assert parse_spec_counters('vllm:num_requests_running{engine="0"} 1.0\n') is None


def test_a_counter_that_is_not_a_number_is_an_error() -> None:
    with pytest.raises(ValueError):
        parse_spec_counters("vllm:spec_decode_num_drafts_total{engine=\"0\"} many\n")
