"""The knee diagnosis: its pure parts on hand-made results, and the step model's error at 70-100%
prefill utilisation on every pairing (issue #26: measured and bounded)."""

import pytest

from gateway.fleet.replay.request_result import RequestResult
from gateway.fleet.sweep.diagnose import band, miss_kind, misses, render, replay, stalls, step_model_errors
from gateway.flow import Budget, Prediction

BUDGET = Budget(ttft_ms=1000, tpot_ms=50)


def result(at_s=0.0, *, ttft_s=0.2, e2e_s=0.5, tokens=7, replica="r0", task="coding", status="ok", waited_s=0.0):
    return RequestResult(at_s, task, status, "fast" if status == "ok" else None, 1000, tokens, ttft_s, e2e_s,
                         budget=BUDGET, replica=replica, waited_s=waited_s)


@pytest.mark.parametrize(("utilisation", "name"), [(0.0, "under 30%"), (0.29, "under 30%"), (0.3, "30-70%"),
                                                    (0.7, "70-100%"), (0.9, "70-100%")])
def test_bands(utilisation, name):
    assert band(utilisation) == name


@pytest.mark.parametrize(("r", "kind"), [
    (result(), None),
    (result(ttft_s=1.5, e2e_s=1.7), "ttft"),
    (result(e2e_s=0.6), "tpot"),  # 0.4 s over six steps: 67 ms per token
    (result(ttft_s=1.5, e2e_s=2.0), "ttft+tpot"),
    (result(status="rejected", ttft_s=None, e2e_s=None), "refused"),
])
def test_a_lost_request_says_which_target_it_missed(r, kind):
    assert miss_kind(r) == kind


def test_misses_are_counted_by_task_variant_and_kind():
    assert misses([result(), result(e2e_s=0.6), result(e2e_s=0.6)]) == {("coding", "fast", "tpot"): 2}


def test_a_stall_is_avoidable_only_if_every_stalling_prompt_had_a_harmless_replica():
    victim = result(0.0, e2e_s=0.6)  # missed its TPOT target on r0
    stalling = result(0.1, e2e_s=2.0, tokens=200, task="chat")  # a prompt dispatched to r0 during it
    elsewhere_busy = result(0.05, e2e_s=0.4, replica="r1")  # a short answer in flight on r1 then
    assert stalls([victim, stalling]).avoidable == 0  # no other replica at all
    assert stalls([victim, stalling, result(5.0, replica="r1")]).avoidable == 1  # r1 idle at 0.1 s
    report = stalls([victim, stalling, elsewhere_busy])
    assert (report.tpot_misses, report.avoidable, report.stalling_prompts) == (1, 0, {1: 1})


def test_the_step_models_error_is_relative_to_the_actual_times():
    r = RequestResult(0.0, "chat", "ok", "fast", 100, 11, 0.1, 1.1, budget=BUDGET,
                      step_model=Prediction(ttft_ms=150.0, e2e_ms=1100.0, tpot_ms=50.0, utilisation=0.8))
    error = step_model_errors([r])[("fast", "70-100%")]
    assert (error.count, error.ttft_median, error.tpot_median) == (1, pytest.approx(0.5), pytest.approx(-0.5))


# Loads near each pairing's knee on the tuning window (docs/results/knee: where 95% good is crossed).
KNEE_LOADS = {"h100-70b:standard=1,fast=3": 1.2, "h100-70b-w4a16:standard=2,fast=2": 0.7,
              "h100-70b-eagle3:standard=2,fast=2": 0.8, "h100-70b-fp8-ngram:standard=2,fast=2": 1.2}


@pytest.mark.parametrize("replicas", sorted(KNEE_LOADS))
def test_the_step_model_at_70_to_100_percent_prefill_utilisation(replicas):
    """The bound reached: TTFT within 25% in the median (prompts queued ahead are counted); TPOT
    low, by at most 80% in the median, never high: the model leaves out the stall that later
    prompts' prefill adds to a decode, which the fixed-fleet objective adds itself
    (``prefill_interference_ms``), and which no placement can avoid for most short answers
    (docs/routing.md, "At the knee")."""
    results = replay(replicas, "duet-fixed", KNEE_LOADS[replicas], "tuning", span_s=600)
    busy = [e for (_, name), e in step_model_errors(results).items() if name == "70-100%"]
    count = sum(e.count for e in busy)
    assert count >= 5
    ttft = sum(e.ttft_median * e.count for e in busy) / count
    tpot = sum(e.tpot_median * e.count for e in busy) / count
    assert abs(ttft) <= 0.25
    assert -0.8 <= tpot <= 0.0


def test_a_committed_diagnosis_renders_its_misses_stalls_and_errors():
    found = {"command": "python -m gateway.fleet.sweep.diagnose ...", "requests": 100, "good_fraction": 0.9,
             "misses": {"coding / fast / tpot": 8}, "stalls": {"tpot_misses": 8, "avoidable": 2,
                                                               "stalling_prompts": {"1": 2, "6": 6}},
             "step_model_error": {"fast / 70-100%": {"count": 5, "ttft_median": -0.04, "ttft_abs_median": 0.1,
                                                     "tpot_median": -0.35, "tpot_abs_median": 0.35}}}
    text = render([found])
    assert "| coding / fast / tpot | 8 |" in text
    assert "TPOT misses: 8; 6 of them saw 6 or more prompts" in text and "2 (25%) could have been spared" in text
    assert "| fast / 70-100% | 5 | -4% | 10% | -35% | 35% |" in text
    assert render([]) == "No diagnosis committed yet."
