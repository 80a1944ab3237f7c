"""Load-test requests fit the model's window as the gateway's /v1/models reports it."""

from __future__ import annotations

import pytest

from gateway.fleet.workload.traces import TraceWindow, load_trace, replay_arrivals
from loadtests.load.fit import ContextUnknown, FitTally, context_from_models

LISTING = {"object": "list", "data": [
    {"id": "smollm2", "max_model_len": 2048},
    {"id": "smollm2:fast", "max_model_len": 1024},
    {"id": "other"},
]}


@pytest.mark.parametrize(("model", "expected"), [("smollm2", 2048), ("smollm2:fast", 1024), ("other", None)])
def test_the_window_is_the_named_models_max_model_len(model, expected):
    assert context_from_models(LISTING, model) == expected


def test_a_model_the_gateway_does_not_serve_is_named_with_what_it_serves():
    with pytest.raises(ContextUnknown, match="no model 'nope' .*smollm2, smollm2:fast, other"):
        context_from_models(LISTING, "nope")


def test_the_tally_counts_what_it_scaled_by_task():
    tally = FitTally(2048)
    assert tally.fit("coding", 16000, 20) == (2048 - 20 - 64, 20)
    assert tally.fit("chat", 100, 50) == (100, 50)
    assert tally.report("x") == ("duet: x: 1 of 2 trace entries scaled down to fit the 2,048-token context "
                                 "(chat 0/1, coding 1/1); none skipped")


def test_a_replay_schedule_fitted_to_2048_tokens_fits_and_is_counted():
    tally = FitTally(2048)
    traces = {"coding": load_trace("code"), "chat": load_trace("conv")}
    schedule = replay_arrivals(traces, TraceWindow(300), max_context=2048, fit=tally.fit)
    assert all(a.input_tokens + a.output_tokens + 64 <= 2048 for a in schedule)
    assert sum(tally.drawn.values()) == len(schedule) and 0 < sum(tally.scaled.values()) < len(schedule)
