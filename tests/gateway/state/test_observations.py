"""Time-decayed means and how outcomes feed them."""

from __future__ import annotations

import pytest

from gateway.outcome import Outcome
from gateway.state.observations import (
    DecayingMean,
    Observations,
    observe,
    time_per_output_token,
)
from gateway.state.outcomes import OutcomeKind

HALF_LIFE = 10.0


def _outcome(ttft_s: float | None = 0.1, duration_s: float = 1.1, tokens: int = 11) -> Outcome:
    return Outcome(
        "r1",
        ok=True,
        status=200,
        ttft_s=ttft_s,
        duration_s=duration_s,
        input_tokens=5,
        output_tokens=tokens,
    )


def test_empty_mean_is_none_and_first_sample_is_exact() -> None:
    assert DecayingMean().value is None
    assert DecayingMean().add(0.3, now=123.0, half_life_s=HALF_LIFE).value == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("gap_s", "expected"),
    [
        (0.0, 2.0),  # simultaneous samples weigh equally: (1 + 3) / 2
        (10.0, (1 * 0.5 + 3) / 1.5),  # one half-life: the old sample counts half
        (20.0, (1 * 0.25 + 3) / 1.25),
        (1e6, 3.0),  # the old sample is forgotten
    ],
)
def test_old_samples_weigh_half_per_half_life(gap_s: float, expected: float) -> None:
    mean = DecayingMean().add(1.0, 0.0, HALF_LIFE).add(3.0, gap_s, HALF_LIFE)
    assert mean.value == pytest.approx(expected)


def test_a_sample_from_the_past_does_not_inflate_old_weight() -> None:
    mean = DecayingMean().add(1.0, 10.0, HALF_LIFE).add(3.0, 5.0, HALF_LIFE)
    assert mean.value == pytest.approx(2.0) and mean.at == 10.0


@pytest.mark.parametrize(
    ("ttft_s", "duration_s", "tokens", "expected"),
    [
        (0.1, 1.1, 11, 0.1),
        (0.5, 0.5, 1, None),  # one token: no decode interval to measure
        (None, 2.0, 50, None),  # no first-token time (non-streamed)
        (0.2, 0.1, 3, 0.0),  # clocks disagree: never negative
    ],
)
def test_time_per_output_token(
    ttft_s: float | None, duration_s: float, tokens: int, expected: float | None
) -> None:
    per_token = time_per_output_token(_outcome(ttft_s, duration_s, tokens))
    assert per_token == (pytest.approx(expected) if expected is not None else None)


def test_success_feeds_latencies_and_a_zero_error() -> None:
    obs = observe(Observations(), _outcome(), OutcomeKind.SUCCESS, 0.0, HALF_LIFE)
    assert obs.ttft_s == pytest.approx(0.1)
    assert obs.tpot_s == pytest.approx(0.1)
    assert obs.error_rate == 0.0
    assert obs.errors.weight == 1.0


@pytest.mark.parametrize(
    ("kind", "error_rate", "errors_weight"),
    [
        (OutcomeKind.FAILURE, 0.5, 2.0),
        (OutcomeKind.OVERLOAD, 0.5, 2.0),
        (OutcomeKind.CLIENT, 0.0, 1.0),  # the client's fault: not counted at all
    ],
)
def test_errors_count_in_error_rate_but_not_in_latency(
    kind: OutcomeKind, error_rate: float, errors_weight: float
) -> None:
    obs = observe(Observations(), _outcome(), OutcomeKind.SUCCESS, 0.0, HALF_LIFE)
    slow = _outcome(ttft_s=9.0, duration_s=30.0)
    after = observe(obs, slow, kind, 0.0, HALF_LIFE)
    assert after.error_rate == pytest.approx(error_rate)
    assert after.errors.weight == errors_weight
    assert after.ttft_s == pytest.approx(0.1) and after.tpot_s == pytest.approx(0.1)


def test_error_rate_recovers_as_successes_arrive() -> None:
    obs = Observations()
    for t in range(5):
        obs = observe(obs, _outcome(), OutcomeKind.FAILURE, float(t), HALF_LIFE)
    assert obs.error_rate == pytest.approx(1.0)
    for t in range(5, 65):
        obs = observe(obs, _outcome(), OutcomeKind.SUCCESS, float(t), HALF_LIFE)
    assert obs.error_rate < 0.05


def test_latency_model_bias_is_learned_from_predictions():
    import math

    from gateway.outcome import Outcome
    from gateway.state.observations import Observations, observe
    from gateway.state.outcomes import OutcomeKind

    obs = Observations()
    assert obs.ttft_bias == 1.0 and obs.tpot_bias == 1.0
    for i in range(5):
        outcome = Outcome("r", True, 200, ttft_s=0.2, duration_s=1.2, input_tokens=10, output_tokens=11,
                          predicted_ttft_s=0.1, predicted_tpot_s=0.2)
        obs = observe(obs, outcome, OutcomeKind.SUCCESS, float(i), 30.0)
    assert obs.ttft_bias == pytest.approx(2.0)
    assert obs.tpot_bias == pytest.approx(0.5)
    wild = Outcome("r", True, 200, ttft_s=100.0, duration_s=101.0, input_tokens=1, output_tokens=1, predicted_ttft_s=0.1)
    capped = observe(Observations(), wild, OutcomeKind.SUCCESS, 0.0, 30.0)
    assert capped.ttft_bias == pytest.approx(math.e)


def test_a_non_stream_answer_feeds_time_per_token_with_the_observed_first_token_time_standing_in() -> None:
    streamed = observe(Observations(), _outcome(0.1, 1.1, 11), OutcomeKind.SUCCESS, 0.0, HALF_LIFE)
    # No first-token time (non-stream), 20 tokens in 4.0 s: (4.0 - 0.1 observed TTFT) / 19 per token.
    slowed = observe(streamed, _outcome(None, 4.0, 20), OutcomeKind.SUCCESS, 0.0, HALF_LIFE)
    assert slowed.tpot.weight == 2.0
    assert slowed.tpot_s == pytest.approx((0.1 + 3.9 / 19) / 2)
    assert slowed.ttft_s == pytest.approx(0.1)  # nothing learned about TTFT from it


def test_stall_from_prompts_sent_later_is_not_learned_as_the_models_bias() -> None:
    """A 6-token answer predicted at 20 ms a token took 220 ms of decode: 100 ms of it was a prompt
    the gateway sent to the replica afterwards. Judged against the prediction plus that stall, the
    model was right, and the bias stays 1; judged against the bare prediction it would learn 2.2x."""
    from gateway.domain import Prediction
    from gateway.state.observations import with_prediction

    prediction = Prediction(ttft_ms=100.0, e2e_ms=200.0, tpot_ms=20.0, model_ttft_ms=100.0, model_tpot_ms=20.0)
    outcome = Outcome("r", True, 200, ttft_s=0.1, duration_s=0.32, input_tokens=5, output_tokens=6)
    explained = with_prediction(outcome, prediction, stalled_ms=100.0)
    assert explained.predicted_tpot_s == pytest.approx(0.040)  # 20 ms + 100 ms over 5 steps
    assert observe(Observations(), explained, OutcomeKind.SUCCESS, 0.0, HALF_LIFE).tpot_bias == pytest.approx(1.1)
    naive = observe(Observations(), with_prediction(outcome, prediction), OutcomeKind.SUCCESS, 0.0, HALF_LIFE)
    assert naive.tpot_bias == pytest.approx(2.2)
    assert with_prediction(outcome, None) is outcome
