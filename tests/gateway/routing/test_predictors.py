import pytest

from gateway.domain import Prediction
from gateway.routing.predictors import QueueAwareLatencyPredictor, prefill_interference_ms, replica_load

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


# --- step-model -------------------------------------------------------------------------------

from gateway.cost import Price  # noqa: E402
from gateway.domain import Variant, VariantKind  # noqa: E402
from gateway.routing.predictors import StepModelPredictor  # noqa: E402
from gateway.speed import SpeedPrior  # noqa: E402

STEP = Variant(
    model="m", name="standard", kind=VariantKind.FULL, served_model_name="s", max_model_len=32768, supports_tools=True,
    price=Price(1, 1),
    speed=SpeedPrior(prefill_tokens_per_s=10_000, decode_s_per_token=0.016, step_s_per_seq=0.0001,
                     kv_read_s_per_token=0.0, frontend_s=0.003, max_num_batched_tokens=8192, kv_cache_tokens=400_000),
)
SPEC = Variant(
    model="m", name="fast", kind=VariantKind.SPECULATIVE, served_model_name="f", max_model_len=32768, supports_tools=True,
    price=Price(1, 1),
    speed=SpeedPrior(prefill_tokens_per_s=10_000, decode_s_per_token=0.016, step_s_per_seq=0.0001, draft_tokens=3,
                     draft_s_per_step=0.001, tokens_per_step=(("coding", 2.5), ("default", 1.5))),
)
step_model = StepModelPredictor()


def test_step_model_idle_request_is_prefill_plus_decode_steps():
    p = step_model.predict(request(input_tokens=1000, expected_output_tokens=11), candidate(STEP))
    step = 0.016
    # Idle: no step in flight to wait for; one prefill chunk.
    assert p.ttft_ms == pytest.approx((0.003 + step + 1000 / 10_000) * 1e3)
    assert p.tpot_ms == pytest.approx((step + 0.0001) * 1e3)
    assert p.e2e_ms == pytest.approx(p.ttft_ms + 10 * p.tpot_ms)


@pytest.mark.parametrize(
    ("base", "loaded", "slower"),
    [
        ({}, {"running": 100}, "tpot"),                                  # a bigger batch: longer steps
        ({}, {"prefill_backlog_tokens": 20_000}, "ttft"),                # prompts queued ahead
        ({"running": 10}, {"running": 10, "waiting": 5}, "ttft"),        # vLLM's own queue
        ({}, {"ttft_bias": 2.0}, "ttft"),                                # learned: this replica is slower
        ({}, {"tpot_bias": 1.5}, "tpot"),
    ],
)
def test_step_model_reacts_to_load(base, loaded, slower):
    before = step_model.predict(request(input_tokens=1000), candidate(STEP, **base))
    after = step_model.predict(request(input_tokens=1000), candidate(STEP, **loaded))
    assert getattr(after, f"{slower}_ms") > getattr(before, f"{slower}_ms")


def test_bias_corrects_but_model_values_stay_raw():
    p = step_model.predict(request(), candidate(STEP, ttft_bias=2.0, tpot_bias=3.0))
    assert p.ttft_ms == pytest.approx(2 * p.model_ttft_ms)
    assert p.tpot_ms == pytest.approx(3 * p.model_tpot_ms)


def test_speculation_pays_off_for_copy_heavy_tasks_at_low_batch_only():
    coding_idle = step_model.predict(request(task="coding"), candidate(SPEC)).tpot_ms
    chat_idle = step_model.predict(request(task="chat"), candidate(SPEC)).tpot_ms
    plain_idle = step_model.predict(request(task="coding"), candidate(STEP)).tpot_ms
    assert coding_idle < chat_idle < plain_idle
    coding_busy = step_model.predict(request(task="coding"), candidate(SPEC, running=400)).tpot_ms
    plain_busy = step_model.predict(request(task="coding"), candidate(STEP, running=400)).tpot_ms
    assert coding_busy / plain_busy > coding_idle / plain_idle


def test_step_model_busy_replica_adds_half_the_step_in_flight():
    idle = step_model.predict(request(input_tokens=1000), candidate(STEP))
    busy = step_model.predict(request(input_tokens=1000), candidate(STEP, running=1))
    # One running sequence: the step in flight (base + one sequence) is waited for by half.
    assert busy.model_ttft_ms - idle.model_ttft_ms >= 0.5 * 0.016 * 1e3


def test_prefill_interference_is_the_backlog_and_the_rate_over_the_window_spread_over_the_output():
    prediction = Prediction(ttft_ms=200.0, e2e_ms=300.0, tpot_ms=20.0)
    # Window: 200 ms wait + 5 x 20 ms decode = 0.3 s; 1,000 queued + 10,000 tok/s x 0.3 s = 4,000
    # tokens at 5,000 tok/s = 800 ms, over 5 tokens after the first.
    busy = candidate(FAST, prefill_backlog_tokens=1000, prefill_tokens_per_s=10000.0)
    short = request(expected_output_tokens=6)
    assert prefill_interference_ms(short, busy, prediction) == pytest.approx(160.0)
    assert prefill_interference_ms(short, candidate(FAST), prediction) == 0.0


def test_prefill_interference_matters_to_short_answers_only():
    prediction = Prediction(ttft_ms=200.0, e2e_ms=300.0, tpot_ms=20.0)
    # Prompts arrive at half the replica's prefill speed, with a burst queued.
    busy = candidate(FAST, prefill_backlog_tokens=8000, prefill_tokens_per_s=2500.0)
    short = prefill_interference_ms(request(expected_output_tokens=6), busy, prediction)
    long = prefill_interference_ms(request(expected_output_tokens=256), busy, prediction)
    assert short == pytest.approx((8000 + 2500 * 0.3) / 5000 * 1e3 / 5)
    assert short > 50.0 > prediction.tpot_ms + long


def test_step_model_reports_prompt_utilisation_without_stretching_every_step():
    """Later prompts stall some steps, which a typical request misses: the mean step stays plain and
    the utilisation is reported for the objective's margin (the tail is prefill_interference_ms)."""
    quiet = step_model.predict(request(input_tokens=1000), candidate(STEP))
    busy = step_model.predict(request(input_tokens=1000), candidate(STEP, prefill_tokens_per_s=5_000))
    assert busy.tpot_ms == pytest.approx(quiet.tpot_ms)
    assert busy.utilisation == pytest.approx(5_000 / STEP.speed.prefill_tokens_per_s)
