"""A speculative replica's decode per task: a stream's decode read without its first chunk, the
block's tokens per step set so the one-stream prediction is the measured time per token (never
faster), the step scaled when a task gains under one token per step, and the record of what was
measured and what the prior kept."""

from __future__ import annotations

import pytest

from serving.calibration.by_task import TASK_PROMPTS, is_drafting, task_decode_sample, with_task_speeds
from serving.calibration.fit import StreamTrace, TaskDecodeSample, predicted_step_s
from serving.errors import CalibrationError

# fast-spec's block as duet up calibrated it on avx512 (docs/results/default-pair-avx512.json):
# 22.5 ms one-stream step, the prior's tokens per step.
FAST_SPEC = {"prefill_tokens_per_s": 767.2, "decode_s_per_token": 0.00227, "decode_slowdown_per_seq": 2.25,
             "step_s_per_seq": 0.005107, "draft_tokens": 0.08, "draft_s_per_step": 0.01362, "draft_s_per_seq": 0.001135,
             "tokens_per_step": {"coding": 2.0627, "extraction": 2.5305, "long-context": 2.0627, "agent": 2.0627,
                                 "reasoning": 1.2344, "chat": 1.0459, "default": 1.0459}}


def test_a_streams_decode_leaves_its_first_chunk_out() -> None:
    # 1 token at 0.0, then 2 tokens a chunk every 30 ms: 8 tokens after the first in 4 chunks.
    sample = task_decode_sample("coding", StreamTrace((0.0, 0.03, 0.06, 0.09, 0.12), 9))
    assert sample.decode_s_per_token == pytest.approx(0.12 / 8)
    assert sample.tokens_per_chunk == pytest.approx(2.0)


def test_a_stream_of_two_chunks_has_no_decode_to_time() -> None:
    with pytest.raises(CalibrationError, match="chat prompt's answer came in 2 chunks"):
        task_decode_sample("chat", StreamTrace((0.0, 0.03), 2))


def test_a_chat_slower_than_the_step_scales_the_step_and_the_prediction_follows_the_measurement() -> None:
    """The avx512 case: a 22.5 ms step, chat measured at 33 ms/token (speculation gains nothing
    there), a code edit at 19 ms/token."""
    chat, coding = TaskDecodeSample("chat", 0.033, 1.0, 64), TaskDecodeSample("coding", 0.019, 1.8, 64)
    block, record = with_task_speeds(FAST_SPEC, [chat, coding])
    alone = predicted_step_s(block, 1)
    table = block["tokens_per_step"]
    assert table["chat"] == table["default"] == pytest.approx(1.0, abs=1e-3)
    for sample in (chat, coding):
        predicted = alone / table[sample.task]
        assert sample.decode_s_per_token <= predicted < sample.decode_s_per_token * 1.001
    assert record["step_scaled_for_tasks"] == pytest.approx(0.033 / predicted_step_s(FAST_SPEC, 1), rel=1e-3)
    assert block["decode_slowdown_per_seq"] == FAST_SPEC["decode_slowdown_per_seq"]
    assert record["tokens_per_step_measured"] == ["chat", "coding", "default"]
    assert record["tokens_per_step_from_prior"] == ["agent", "extraction", "long-context", "reasoning"]
    assert {t: table[t] for t in record["tokens_per_step_from_prior"]} == {
        t: FAST_SPEC["tokens_per_step"][t] for t in record["tokens_per_step_from_prior"]}


def test_tasks_faster_than_the_step_leave_it_as_measured() -> None:
    step = predicted_step_s(FAST_SPEC, 1)
    block, record = with_task_speeds(FAST_SPEC, [TaskDecodeSample("chat", step / 1.2, 1.2, 64)])
    assert record["step_scaled_for_tasks"] == 1.0
    assert block["decode_s_per_token"] == FAST_SPEC["decode_s_per_token"]
    assert block["tokens_per_step"]["chat"] == pytest.approx(1.2, abs=1e-4)
    assert block["tokens_per_step"]["chat"] <= 1.2  # rounded down: never predicted faster


def test_nothing_measured_changes_nothing_and_records_nothing() -> None:
    assert with_task_speeds(FAST_SPEC, []) == (FAST_SPEC, {})


def test_only_a_drafting_prior_has_its_tasks_probed_and_the_prompts_name_their_keys() -> None:
    assert is_drafting(FAST_SPEC)
    assert not is_drafting({"decode_s_per_token": 0.03}) and not is_drafting(None)
    assert {p.task: p.keys for p in TASK_PROMPTS} == {"chat": ("chat", "default"), "coding": ("coding",)}
