"""A speculative replica's decode measured per task (pure: no I/O).

Speculation gains only where drafts are accepted: n-gram drafts exist where the answer copies
the prompt (a code edit), not where it is new text (a chat answer). The probe's forced decode
is one prompt of neither kind, so the tokens a step yields on each task cannot be read from it;
left at a launch profile's default, a chat answer measured slower than standard was predicted
faster (issue 38: fast-spec on avx512, 21.6 ms/token predicted, 0.82-0.95x standard's speed
measured). So a drafting variant's probe also streams one request alone per task it can prompt
cheaply (``TASK_PROMPTS``: a chat ask, a copy-heavy code edit; each sent with the ``x-duet-task``
header the gateway sends, which the simulator reads its acceptance from), and the block's
``tokens_per_step`` for each becomes the step the block predicts for one stream over the
measured seconds per output token: the gateway then predicts, for a request alone, the time per
token that was measured. Tasks no prompt measured keep the prior's value, and the block's
``calibration`` record says which were measured and which kept.

A task that decodes slower than the block's one-stream step (its drafting steps cost more than
they yield) would need fewer than one token per step; the step model's decode and draft terms
are then scaled up to that task's time per token, so every task keeps at least one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serving.calibration.fit import SIGNIFICANT, StreamTrace, TaskDecodeSample, predicted_step_s
from serving.errors import CalibrationError

# Terms scaled together when a task decodes slower than the step model (seconds; the
# slowdown is a ratio of two of them and stays).
_STEP_TERMS = ("decode_s_per_token", "step_s_per_seq", "draft_s_per_step", "draft_s_per_seq")
_CODE = '''def summarize(items, threshold):
    total = 0
    count = 0
    for item in items:
        if item.value > threshold:
            total += item.value
            count += 1
    average = total / count if count else 0.0
    return {"total": total, "count": count, "average": average}'''


@dataclass(frozen=True, slots=True)
class TaskPrompt:
    """A request the probe streams alone: the task header it carries, the ``tokens_per_step``
    keys its measurement sets, and the user message."""

    task: str
    keys: tuple[str, ...]
    message: str


TASK_PROMPTS = (
    # New text: nothing of the answer is in the prompt. It sets ``default`` too: a task the
    # detector does not name is taken to copy nothing (as the launch profiles' priors take it).
    TaskPrompt("chat", ("chat", "default"),
               "Tell me a short story about a lighthouse keeper who finds a message in a bottle."),
    TaskPrompt("coding", ("coding",),
               f"Rename `total` to `running_sum` and `count` to `matches` in this function. Answer with the "
               f"whole function only.\n```python\n{_CODE}\n```"),
)


def task_decode_sample(task: str, trace: StreamTrace) -> TaskDecodeSample:
    """The decode of ``trace`` (the first chunk is prefill's and is left out). Raises
    CalibrationError when fewer than three chunks carried text: no decode to time."""
    times = trace.chunk_times
    if len(times) < 3:
        raise CalibrationError(f"the {task} prompt's answer came in {len(times)} chunks: no decode to time")
    # A replica that does not report usage: one token per chunk at least.
    decoded = max(trace.completion_tokens - 1, len(times) - 1)
    return TaskDecodeSample(task, (times[-1] - times[0]) / decoded, decoded / (len(times) - 1), trace.completion_tokens)


def median_sample(samples: Sequence[TaskDecodeSample]) -> TaskDecodeSample:
    """The sample of median time per token among one task's repeats."""
    ordered = sorted(samples, key=lambda s: s.decode_s_per_token)
    return ordered[(len(ordered) - 1) // 2]


def with_task_speeds(block: Mapping[str, Any], measured: Sequence[TaskDecodeSample],
                     prompts: Sequence[TaskPrompt] = TASK_PROMPTS) -> tuple[dict[str, Any], dict[str, Any]]:
    """``block`` with ``tokens_per_step`` set from ``measured`` (see the module docstring), and
    the record of it for ``calibration``: each task's measured seconds per token and tokens per
    chunk, the keys measured, the keys kept from the prior, and the scale applied to the step
    terms (1.0: none)."""
    out = dict(block)
    if not measured:
        return out, {}
    keys = {p.task: p.keys for p in prompts}
    slowest = max(s.decode_s_per_token for s in measured)
    scale = max(1.0, slowest / predicted_step_s(out, 1))
    for term in _STEP_TERMS:
        if out.get(term) is not None:
            out[term] = _rounded_up(float(out[term]) * scale)
    alone = predicted_step_s(out, 1)
    table = dict(out.get("tokens_per_step") or {})
    measured_keys = []
    for sample in measured:
        for key in keys.get(sample.task, (sample.task,)):
            # Rounded down: the gateway's prediction is then never faster than the measurement.
            table[key] = max(1.0, int(alone / sample.decode_s_per_token * 1e4) / 1e4)
            measured_keys.append(key)
    out["tokens_per_step"] = table
    record = {
        "decode_by_task": {s.task: _task_record(s) for s in measured},
        "tokens_per_step_measured": sorted(measured_keys),
        "tokens_per_step_from_prior": sorted(k for k in table if k not in measured_keys),
        "step_scaled_for_tasks": round(scale, 4),
    }
    return out, record


def _task_record(sample: TaskDecodeSample) -> dict[str, float]:
    record = {"decode_s_per_token": round(sample.decode_s_per_token, 6), "tokens_per_chunk": round(sample.tokens_per_chunk, 3)}
    if sample.acceptance is not None:
        record["acceptance"] = round(sample.acceptance, 3)
    return record


def is_drafting(prior: Mapping[str, Any] | None) -> bool:
    """Whether ``prior`` models speculation (drafts per step above 0): its tasks are probed."""
    return prior is not None and float(prior.get("draft_tokens", 0.0)) > 0


def _rounded_up(value: float) -> float:
    """``value`` to the block's significant digits, never below it (the scaled step then never
    predicts faster than the slowest task measured)."""
    if value <= 0:
        return value
    unit = 10 ** (math.floor(math.log10(value)) - SIGNIFICANT + 1)
    return float(f"{math.ceil(value / unit - 1e-9) * unit:.{SIGNIFICANT}g}")
