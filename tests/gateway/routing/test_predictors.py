import pytest

from gateway.routing.predictors import QueueAwareLatencyPredictor, replica_load

from .factories import FAST, STANDARD, candidate, request

predictor = QueueAwareLatencyPredictor()


@pytest.mark.parametrize(
    ("state", "load"),
    [({}, 0), ({"in_flight": 3}, 3), ({"running": 5, "waiting": 2}, 7), ({"in_flight": 9, "running": 5}, 9)],
)
def test_replica_load_takes_the_larger_of_own_and_scraped(state, load):
    assert replica_load(candidate(STANDARD, **state)) == load


def test_idle_prediction_is_prefill_plus_decode_from_the_prior():
    p = predictor.predict(request(input_tokens=500, expected_output_tokens=11), candidate(STANDARD))
    assert p.ttft_ms == pytest.approx((500 / 5000 + 0.030) * 1e3)
    assert p.tpot_ms == pytest.approx(30.0)
    assert p.e2e_ms == pytest.approx(p.ttft_ms + 10 * 30.0)


def test_time_per_token_grows_with_running_sequences():
    idle = predictor.predict(request(), candidate(FAST))
    busy = predictor.predict(request(), candidate(FAST, running=8))
    assert busy.tpot_ms == pytest.approx(idle.tpot_ms * (1 + 0.15 * 8))


def test_speculative_advantage_vanishes_under_load():
    """The fast variant's prior is 2x faster idle but slows more per sequence."""
    r = request()
    assert predictor.predict(r, candidate(FAST)).e2e_ms < predictor.predict(r, candidate(STANDARD)).e2e_ms
    assert predictor.predict(r, candidate(FAST, running=16)).e2e_ms > predictor.predict(r, candidate(STANDARD, running=16)).e2e_ms


def test_waiting_requests_delay_the_first_token():
    assert predictor.predict(request(), candidate(STANDARD, running=4, waiting=4)).ttft_ms > predictor.predict(
        request(), candidate(STANDARD, running=4)
    ).ttft_ms


def test_observed_latency_is_blended_in():
    slow = predictor.predict(request(), candidate(STANDARD, tpot_s=0.090))
    assert slow.tpot_ms == pytest.approx(0.5 * 30 + 0.5 * 90)


def test_observed_ttft_only_raises_the_prediction():
    base = predictor.predict(request(input_tokens=1000), candidate(STANDARD))
    fast_obs = predictor.predict(request(input_tokens=1000), candidate(STANDARD, ttft_s=0.001))
    slow_obs = predictor.predict(request(input_tokens=1000), candidate(STANDARD, ttft_s=2.0))
    assert fast_obs.ttft_ms == pytest.approx(base.ttft_ms)
    assert slow_obs.ttft_ms > base.ttft_ms
