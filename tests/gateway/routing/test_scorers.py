import pytest

from gateway.domain import Prediction
from gateway.routing.scorers import DecodeSlackScorer, LeastLoadedScorer, LowErrorScorer, PredictedLatencyScorer

from .factories import STANDARD, candidate, request

P = Prediction(ttft_ms=10, e2e_ms=1000, tpot_ms=10)

CASES = [
    (LeastLoadedScorer(), candidate(STANDARD), P, 1.0),
    (LeastLoadedScorer(), candidate(STANDARD, in_flight=3), P, 0.25),
    (LeastLoadedScorer(), candidate(STANDARD, running=1, waiting=2), P, 0.25),
    (PredictedLatencyScorer(scale_ms=1000), candidate(STANDARD), P, 0.5),
    (PredictedLatencyScorer(scale_ms=1000), candidate(STANDARD), Prediction(0, 0, 0), 1.0),
    (PredictedLatencyScorer(scale_ms=1000), candidate(STANDARD), Prediction(0, 3000, 0), 0.25),
    (LowErrorScorer(), candidate(STANDARD, error_rate=0.2), P, 0.8),
    (LowErrorScorer(), candidate(STANDARD), P, 1.0),
]


@pytest.mark.parametrize(("scorer", "cand", "prediction", "expected"), CASES)
def test_scores(scorer, cand, prediction, expected):
    value = scorer.score(request(), cand, prediction)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(expected)


@pytest.mark.parametrize(("state", "expected"), [({}, 1.0), ({"ttft_s": 0.1}, 0.5), ({"ttft_s": 0.3}, 0.25)])
def test_observed_ttft_scorer_prefers_unmeasured_then_fastest(state, expected):
    from gateway.routing.scorers import ObservedTtftScorer

    assert ObservedTtftScorer(scale_ms=100).score(request(), candidate(STANDARD, **state), P) == pytest.approx(expected)


@pytest.mark.parametrize(("slack_ms", "expected"), [(None, 1.0), (500.0, 1.0), (20.0, 1.0), (10.0, 0.5), (-5.0, 0.0)])
def test_decode_slack_scorer_prefers_replicas_where_the_prompt_stalls_nobody_past_budget(slack_ms, expected):
    """100 prompt tokens at 5,000 tokens/s: 20 ms of stall for whatever is decoding there."""
    value = DecodeSlackScorer().score(request(input_tokens=100), candidate(STANDARD, decode_slack_ms=slack_ms), P)
    assert value == pytest.approx(expected)
