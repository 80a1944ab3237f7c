"""The vocabulary's behaviour: a request's Budget (fits, met by, slack, deadline) and priority ranks."""

from __future__ import annotations

import pytest

from gateway.domain import Budget, Prediction, Priority

PREDICTION = Prediction(ttft_ms=200.0, e2e_ms=300.0, tpot_ms=20.0)


@pytest.mark.parametrize(("budget", "margin", "fits"), [
    (Budget(), 1.0, True),
    (Budget(ttft_ms=200.0), 1.0, True),
    (Budget(ttft_ms=200.0), 1.1, False),  # the margin inflates the prediction
    (Budget(latency_ms=299.0), 1.0, False),
    (Budget(tpot_ms=19.0), 1.0, False),
    (Budget(ttft_ms=1000.0, latency_ms=1000.0, tpot_ms=25.0), 1.2, True),
])
def test_fits_checks_every_target_of_the_prediction(budget, margin, fits):
    assert budget.fits(PREDICTION, margin) is fits


@pytest.mark.parametrize(("budget", "ttft_s", "e2e_s", "tokens", "met"), [
    (Budget(ttft_ms=100.0), 0.09, 5.0, 50, True),
    (Budget(ttft_ms=100.0), 0.11, 0.2, 50, False),
    (Budget(latency_ms=1000.0), 0.1, 1.01, 50, False),
    (Budget(tpot_ms=10.0), 0.1, 0.1 + 49 * 0.0099, 50, True),
    (Budget(tpot_ms=10.0), 0.1, 0.1 + 49 * 0.0101, 50, False),
    (Budget(tpot_ms=10.0), 0.1, 9.0, 1, True),  # one token: TPOT undefined
    # A non-stream answer (no TTFT measured): the client's first token came with the whole answer.
    (Budget(ttft_ms=100.0), None, 0.09, 50, True),
    (Budget(ttft_ms=100.0), None, 0.5, 50, False),
    (Budget(tpot_ms=1.0), None, 0.5, 50, True),
])
def test_met_by_judges_what_was_measured(budget, ttft_s, e2e_s, tokens, met):
    assert budget.met_by(ttft_s, e2e_s, tokens) is met


@pytest.mark.parametrize(("budget", "slack"), [
    (Budget(), None),
    (Budget(tpot_ms=50.0), (50.0 - 20.0) * 5),  # five decode steps, 30 ms to spare on each
    (Budget(latency_ms=400.0), 100.0),
    (Budget(tpot_ms=50.0, latency_ms=400.0), 100.0),  # the tighter of the two
    (Budget(tpot_ms=10.0), -50.0),  # predicted to miss already
])
def test_slack_is_the_stall_a_request_can_take_within_its_budget(budget, slack):
    assert budget.slack_ms(PREDICTION, output_tokens=6) == slack


def test_a_one_token_answer_has_no_tpot_slack_to_speak_of():
    assert Budget(tpot_ms=50.0).slack_ms(PREDICTION, output_tokens=1) is None


@pytest.mark.parametrize(("budget", "expected"), [
    (Budget(ttft_ms=500.0, latency_ms=9000.0), 0.5), (Budget(latency_ms=9000.0), 9.0), (Budget(), 30.0),
])
def test_deadline_is_the_tightest_known_start_target(budget, expected):
    assert budget.deadline_s(30.0) == expected


def test_over_by_is_the_worst_ratio_and_never_below_one():
    assert Budget(ttft_ms=100.0, latency_ms=150.0).over_by(PREDICTION) == 2.0
    assert Budget(ttft_ms=1000.0).over_by(PREDICTION) == 1.0


def test_priority_ranks_follow_the_declared_order():
    assert [p.rank for p in (Priority.INTERACTIVE, Priority.BATCH, Priority.SHEDDABLE)] == [0, 1, 2]
