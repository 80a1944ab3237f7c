"""The step model from probe samples: exact recovery on synthetic samples, the decode window,
clamps that are said, refusals when nothing can be fitted, and how a prior is kept or scaled."""

from __future__ import annotations

import pytest

from serving.calibration.fit import (
    DecodeSample,
    PrefillSample,
    ProbeSamples,
    StreamTrace,
    block_notes,
    decode_sample,
    drafting_scale,
    fit_line,
    measure,
    predicted_step_s,
    speed_block,
)
from serving.errors import CalibrationError

FRONTEND, BASE, PER_SEQ, PREFILL_S = 0.012, 0.020, 0.004, 0.0005


def samples(prefill: list[tuple[int, float]] | None = None, decode: list[tuple[int, float]] | None = None,
            tokens_per_chunk: float = 1.0) -> ProbeSamples:
    """Samples of a replica that follows the step model exactly (unless given)."""
    prefill = prefill or [(p, FRONTEND + BASE + PREFILL_S * p) for p in (40, 40, 80, 160, 320)]
    decode = decode or [(n, BASE + PER_SEQ * n) for n in (1, 2, 4, 8)]
    return ProbeSamples("m", tuple(PrefillSample(p, t) for p, t in prefill),
                        tuple(DecodeSample(n, s, tokens_per_chunk) for n, s in decode), 1.0)


def test_fit_line_is_least_squares_and_flat_when_x_does_not_vary() -> None:
    line = fit_line([1.0, 2.0, 3.0], [3.0, 5.0, 7.0])
    assert (line.intercept, line.slope) == pytest.approx((1.0, 2.0))
    flat = fit_line([2.0, 2.0], [1.0, 3.0])
    assert (flat.intercept, flat.slope) == (2.0, 0.0)


def test_a_replica_that_follows_the_step_model_is_recovered_exactly() -> None:
    measured = measure(samples())
    assert measured.prefill_tokens_per_s == pytest.approx(1 / PREFILL_S)
    assert measured.decode_s_per_token == pytest.approx(BASE)
    assert measured.step_s_per_seq == pytest.approx(PER_SEQ)
    assert measured.frontend_s == pytest.approx(FRONTEND)
    assert measured.notes == ()


def test_the_decode_step_is_timed_where_every_stream_decodes() -> None:
    """The second stream starts late (its prefill stalls the first): gaps outside the window
    where both decode are not the step."""
    first = StreamTrace((0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0), 7)
    second = StreamTrace((0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1), 7)
    sample = decode_sample(2, [first, second])
    assert sample.step_s == pytest.approx(0.1)
    assert sample.tokens_per_chunk == 1.0


def test_tokens_per_chunk_reads_speculation_and_too_few_gaps_fall_back_to_all() -> None:
    spec = decode_sample(1, [StreamTrace((0.0, 0.1, 0.2), 7)])
    assert spec.step_s == pytest.approx(0.1) and spec.tokens_per_chunk == pytest.approx(7 / 3)
    with pytest.raises(CalibrationError, match="one chunk each"):
        decode_sample(2, [StreamTrace((0.0,), 1), StreamTrace((0.1,), 1)])
    with pytest.raises(CalibrationError, match="no tokens"):
        decode_sample(1, [StreamTrace((), 0)])


def test_out_of_range_fits_are_clamped_and_said() -> None:
    """Steps that grow faster than linearly put the intercept below zero; steps that shrink give
    a negative per-stream cost; a TTFT intercept below the base step a negative frontend."""
    convex = measure(samples(decode=[(1, 0.010), (2, 0.030), (4, 0.090)]))
    assert convex.decode_s_per_token == pytest.approx(0.05 * 0.010)
    assert any("below 5%" in note for note in convex.notes)
    shrinking = measure(samples(decode=[(1, 0.020), (2, 0.019), (4, 0.018)]))
    assert shrinking.step_s_per_seq == 0.0 and any("shorter" in note for note in shrinking.notes)
    no_frontend = measure(samples(prefill=[(40, 0.001 + 40 * PREFILL_S), (400, 0.001 + 400 * PREFILL_S)]))
    assert no_frontend.frontend_s == 0.0 and any("frontend 0" in note for note in no_frontend.notes)


@pytest.mark.parametrize(("prefill", "decode", "message"), [
    ([(40, 0.5), (400, 0.5)], None, "did not grow with the prompt"),
    ([(40, 0.5), (40, 0.6)], None, "fewer than two prompt sizes"),
])
def test_nothing_to_fit_is_refused(prefill: list[tuple[int, float]], decode: None, message: str) -> None:
    with pytest.raises(CalibrationError, match=message):
        measure(samples(prefill=prefill, decode=decode))


def test_no_decode_samples_is_refused() -> None:
    empty = ProbeSamples("m", samples().prefill, (), 1.0)
    with pytest.raises(CalibrationError, match="no decode step"):
        measure(empty)


def test_the_block_keeps_the_priors_limits_and_replaces_the_measured_terms() -> None:
    prior = {"prefill_tokens_per_s": 1.0, "decode_s_per_token": 1.0, "decode_slowdown_per_seq": 0.5,
             "max_num_seqs": 7, "kv_cache_tokens": 1234, "kv_read_s_per_token": 1e-6,
             "calibration": {"hardware_class": "old"}}
    probed = samples()
    block = speed_block(measure(probed), probed, prior)
    assert block["prefill_tokens_per_s"] == pytest.approx(1 / PREFILL_S)
    assert block["decode_s_per_token"] == pytest.approx(BASE)
    assert block["step_s_per_seq"] == pytest.approx(PER_SEQ)
    assert block["decode_slowdown_per_seq"] == pytest.approx(PER_SEQ / BASE)
    assert (block["max_num_seqs"], block["kv_cache_tokens"], block["kv_read_s_per_token"]) == (7, 1234, 1e-6)
    assert "calibration" not in block  # the old record goes: the caller writes the new one


def test_a_drafting_prior_keeps_its_shape_scaled_to_the_measured_steps() -> None:
    """A probe's prompt drafts little, so draft costs cannot be read apart from the step: a
    replica measured twice as fast as its prior predicts gets every decode term halved."""
    prior = {"prefill_tokens_per_s": 40.0, "decode_s_per_token": 0.02, "step_s_per_seq": 0.045,
             "draft_tokens": 0.08, "draft_s_per_step": 0.12, "draft_s_per_seq": 0.01,
             "tokens_per_step": {"default": 1.05, "coding": 2.06}}
    probed = samples(decode=[(n, predicted_step_s(prior, n) / 2) for n in (1, 2, 4, 8)], tokens_per_chunk=1.03)
    block = speed_block(measure(probed), probed, prior)
    for key in ("decode_s_per_token", "step_s_per_seq", "draft_s_per_step", "draft_s_per_seq"):
        assert block[key] == pytest.approx(prior[key] / 2, rel=1e-3), key  # type: ignore[operator]
    assert block["tokens_per_step"] == prior["tokens_per_step"] and block["draft_tokens"] == 0.08
    assert [predicted_step_s(block, n) for n in (1, 8)] == pytest.approx([predicted_step_s(prior, n) / 2 for n in (1, 8)],
                                                                          rel=1e-3)


def test_the_predicted_step_is_the_gateways_step_model() -> None:
    """Same terms as gateway.routing.predictors.StepModelPredictor's decode step at idle context."""
    assert predicted_step_s({"decode_s_per_token": 0.02, "decode_slowdown_per_seq": 0.5}, 4) == pytest.approx(0.02 + 0.01 * 4)
    spec = {"decode_s_per_token": 0.02, "step_s_per_seq": 0.01, "draft_tokens": 1.0, "draft_s_per_step": 0.1,
            "draft_s_per_seq": 0.001}
    assert predicted_step_s(spec, 2) == pytest.approx(0.02 + 0.01 * 2 * 2 + 0.1 + 0.001 * 2)


def test_a_drafting_priors_notes_say_the_scale_instead_of_the_decode_fits_clamps() -> None:
    prior = {"prefill_tokens_per_s": 40.0, "decode_s_per_token": 0.02, "step_s_per_seq": 0.045, "draft_tokens": 0.08,
             "draft_s_per_step": 0.12, "draft_s_per_seq": 0.01}
    probed = samples(decode=[(1, 0.010), (2, 0.030), (4, 0.090)])  # convex: the decode fit clamps its base
    measured = measure(probed)
    assert any(note.startswith("decode fit") for note in block_notes(measured, probed, None))
    notes = block_notes(measured, probed, prior)
    assert not any(note.startswith("decode fit") for note in notes)
    scale = drafting_scale(prior, probed.decode)
    assert notes[-1] == f"speculative: the prior's decode and draft terms scaled x{scale:.2f} to the measured steps"
