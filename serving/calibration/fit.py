"""What a probe measured, and the step model's terms it gives (pure: no I/O).

The model is the gateway's (``gateway.speed.SpeedPrior``): a step costs ``base + prefill
tokens x a + decoding sequences x b``, so

- a request alone with a ``P``-token prompt and ``max_tokens=1`` takes ``frontend + base + P x a``:
  a line through (P, TTFT) gives ``a`` (its slope; ``prefill_tokens_per_s`` = 1 / a) and
  ``frontend + base`` (its intercept);
- ``n`` streams decoding together each get one chunk per step of ``base + n x b``: a line through
  (n, median gap between chunks) gives ``base`` (``decode_s_per_token``) and ``b``
  (``step_s_per_seq``).

A speculative replica's step also drafts, and a probe's prompt drafts little (n-gram drafts
where the text repeats its prompt), so its drafting costs cannot be read apart from the step:
for it the prior's decode terms keep their shape and are scaled to the measured steps.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from serving.errors import CalibrationError

# The decode fit's intercept is a small difference of large numbers when b dominates (a CPU): it
# is kept no lower than this share of the one-stream step, and said so.
MIN_BASE_SHARE = 0.05
SIGNIFICANT = 4  # digits written to the speed block: the probe is not more precise than that


@dataclass(frozen=True, slots=True)
class Line:
    """``y = intercept + slope x``."""

    intercept: float
    slope: float


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> Line:
    """Least-squares straight line through the points (slope 0 when all xs are equal).
    (``serving.sim.fidelity.calibrate`` has the same fit; importing it would pull the simulator into the
    gateway's import graph.)"""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return Line(mean_y - slope * mean_x, slope)


@dataclass(frozen=True, slots=True)
class PrefillSample:
    """One request alone: its prompt's tokens (as the replica counted them) and its time to the
    first (and only) token, seconds."""

    prompt_tokens: int
    ttft_s: float


@dataclass(frozen=True, slots=True)
class StreamTrace:
    """One streamed request: when each chunk arrived (monotonic seconds) and the tokens it got."""

    chunk_times: tuple[float, ...]
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class DecodeSample:
    """``concurrency`` streams decoding together: the median gap between chunks while all of
    them decoded (one step), and the mean tokens a chunk carried (above 1: speculation)."""

    concurrency: int
    step_s: float
    tokens_per_chunk: float


@dataclass(frozen=True, slots=True)
class TaskDecodeSample:
    """One request of ``task`` streamed alone: seconds per output token after the first, and
    the mean tokens each chunk (a step) carried after the first; ``acceptance`` when the replica
    exports its speculative-decoding counters (None: it does not)."""

    task: str
    decode_s_per_token: float
    tokens_per_chunk: float
    completion_tokens: int
    acceptance: float | None = None  # draft tokens accepted / proposed over the task's requests (vLLM's counters)


@dataclass(frozen=True, slots=True)
class ProbeSamples:
    """Everything one probe of a replica measured, and how long it took; ``tasks``: a drafting
    replica's decode per task (``serving.calibration.by_task``), the median of each task's repeats."""

    model: str
    prefill: tuple[PrefillSample, ...]
    decode: tuple[DecodeSample, ...]
    elapsed_s: float
    tasks: tuple[TaskDecodeSample, ...] = ()


@dataclass(frozen=True, slots=True)
class Measured:
    """The step model's terms as measured, in seconds (see the module docstring); ``notes``
    says where a fitted value was out of range and what was kept instead."""

    prefill_tokens_per_s: float
    frontend_s: float
    decode_s_per_token: float
    step_s_per_seq: float
    tokens_per_chunk: float
    notes: tuple[str, ...] = ()


def decode_sample(concurrency: int, traces: Sequence[StreamTrace]) -> DecodeSample:
    """The step at ``concurrency`` from streams started together: gaps between chunks inside
    the window where every stream was decoding (after the last first chunk, before the first
    last chunk), else every stream's gaps. Raises CalibrationError when no stream got two chunks."""
    if not traces or any(not t.chunk_times for t in traces):
        raise CalibrationError(f"a stream at concurrency {concurrency} returned no tokens")
    start = max(t.chunk_times[0] for t in traces)
    end = min(t.chunk_times[-1] for t in traces)
    gaps = [b - a for t in traces for a, b in pairwise(t.chunk_times) if a >= start and b <= end]
    if len(gaps) < 3:
        gaps = [b - a for t in traces for a, b in pairwise(t.chunk_times)]
    if not gaps:
        raise CalibrationError(f"the streams at concurrency {concurrency} got one chunk each: no step to time")
    chunks = sum(len(t.chunk_times) for t in traces)
    return DecodeSample(concurrency, statistics.median(gaps), sum(t.completion_tokens for t in traces) / chunks)


def measure(samples: ProbeSamples) -> Measured:
    """The step model's terms from ``samples``. Raises CalibrationError when the prompts'
    times do not grow with their length (no prefill rate to read) or nothing was decoded."""
    sizes = {s.prompt_tokens for s in samples.prefill}
    if len(sizes) < 2:
        raise CalibrationError("prefill was timed at fewer than two prompt sizes: no rate to fit")
    if not samples.decode:
        raise CalibrationError("no decode step was timed")
    notes = []
    by_concurrency = sorted(samples.decode, key=lambda d: d.concurrency)
    decode = fit_line([float(d.concurrency) for d in by_concurrency], [d.step_s for d in by_concurrency])
    one_stream = by_concurrency[0].step_s
    base = decode.intercept
    if base < MIN_BASE_SHARE * one_stream:
        notes.append(f"decode fit's base step {base * 1e3:.2f} ms is below {MIN_BASE_SHARE:.0%} of the "
                     f"one-stream step: kept at that share")
        base = MIN_BASE_SHARE * one_stream
    per_seq = decode.slope
    if per_seq < 0:
        notes.append(f"steps got shorter with more streams ({per_seq * 1e3:.3f} ms per stream): per-stream cost 0")
        per_seq = 0.0
    prefill = fit_line([float(s.prompt_tokens) for s in samples.prefill], [s.ttft_s for s in samples.prefill])
    if prefill.slope <= 0:
        raise CalibrationError(
            "time to first token did not grow with the prompt ("
            + ", ".join(f"{s.prompt_tokens} tokens {s.ttft_s * 1e3:.0f} ms" for s in samples.prefill)
            + "): is the prefix cache answering?")
    frontend = prefill.intercept - base
    if frontend < 0:
        notes.append(f"TTFT's intercept {prefill.intercept * 1e3:.1f} ms is below the base step: frontend 0")
        frontend = 0.0
    chunks = statistics.fmean(d.tokens_per_chunk for d in by_concurrency)
    return Measured(1.0 / prefill.slope, frontend, base, per_seq, chunks, tuple(notes))


def speed_block(measured: Measured, samples: ProbeSamples, prior: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``speed:`` mapping: ``prior``'s (the variant's current block; its scheduler limits and
    KV terms stand, the probe does not measure them) with the measured terms. A prior that
    drafts (``draft_tokens`` > 0) keeps its decode and draft terms' shape, scaled by the median
    ratio of measured to predicted step (see the module docstring)."""
    block = {k: v for k, v in (prior or {}).items() if k != "calibration"}
    block["prefill_tokens_per_s"] = measured.prefill_tokens_per_s
    block["frontend_s"] = measured.frontend_s
    if float(block.get("draft_tokens", 0.0)) > 0:
        block.update(_scaled_drafting_terms(block, samples.decode))
    else:
        block.update({"decode_s_per_token": measured.decode_s_per_token, "step_s_per_seq": measured.step_s_per_seq})
    block["decode_slowdown_per_seq"] = block["step_s_per_seq"] / block["decode_s_per_token"]
    return {k: rounded(v) for k, v in block.items()}


def predicted_step_s(prior: Mapping[str, Any], concurrency: int) -> float:
    """The step ``prior`` predicts at ``concurrency`` decoding sequences (as the gateway's
    step-model predictor does: drafts verified by every sequence, drafting costs added)."""
    base, b = float(prior["decode_s_per_token"]), _per_seq_s(prior)
    drafts = float(prior.get("draft_tokens", 0.0))
    step = base + b * concurrency * (1 + drafts)
    if drafts:
        step += float(prior.get("draft_s_per_step", 0.0)) + float(prior.get("draft_s_per_seq", 0.0)) * concurrency
    return step


def drafting_scale(prior: Mapping[str, Any], decode: Sequence[DecodeSample]) -> float:
    """Median of measured / ``prior``-predicted step over the concurrencies probed."""
    return statistics.median(d.step_s / predicted_step_s(prior, d.concurrency) for d in decode)


def block_notes(measured: Measured, samples: ProbeSamples, prior: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What to tell the operator about the block ``speed_block`` builds: the fit's clamps, except,
    for a drafting prior, the decode fit's (its decode terms are the prior's, scaled: said instead)."""
    if not prior or float(prior.get("draft_tokens", 0.0)) <= 0:
        return measured.notes
    kept = tuple(note for note in measured.notes if not note.startswith(("decode fit", "steps got shorter")))
    return (*kept, f"speculative: the prior's decode and draft terms scaled x{drafting_scale(prior, samples.decode):.2f}"
                   " to the measured steps")


def _scaled_drafting_terms(prior: Mapping[str, Any], decode: Sequence[DecodeSample]) -> dict[str, float]:
    scale = drafting_scale(prior, decode)
    base, b = float(prior["decode_s_per_token"]), _per_seq_s(prior)
    return {"decode_s_per_token": base * scale, "step_s_per_seq": b * scale,
            "draft_s_per_step": float(prior.get("draft_s_per_step", 0.0)) * scale,
            "draft_s_per_seq": float(prior.get("draft_s_per_seq", 0.0)) * scale}


def _per_seq_s(prior: Mapping[str, Any]) -> float:
    """b in seconds (``SpeedPrior.per_seq_s``): ``step_s_per_seq``, else the slowdown x base
    (0.02: the schema's default)."""
    per_seq = prior.get("step_s_per_seq")
    if per_seq is not None:
        return float(per_seq)
    return float(prior.get("decode_slowdown_per_seq", 0.02)) * float(prior["decode_s_per_token"])


def rounded(value: Any) -> Any:
    return float(f"{value:.{SIGNIFICANT}g}") if isinstance(value, float) else value
