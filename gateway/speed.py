"""What a variant's replica is expected to do before the gateway has observed it: vLLM's step
as a roofline model (``SpeedPrior``). Part of the vocabulary beneath ``gateway.domain``; imports
nothing of the project."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SpeedPrior:
    """What a variant's replica is expected to do before the gateway has observed it: vLLM's
    step as a roofline model, ``step = base + prefill tokens x a + decode tokens x b + context
    tokens x c`` (plus draft costs under speculation), where each decoding sequence gets
    ``tokens_per_step`` tokens per step.

    ``prefill_tokens_per_s``: 1 / a, prompt tokens per second of compute.
    ``decode_s_per_token``: the step's fixed part ``base`` = time per output token at batch 1.
    ``decode_slowdown_per_seq``: b relative to base (0.02 = each running sequence adds 2%),
    unless ``step_s_per_seq`` gives b in seconds.
    The rest refine the model when known (a launch profile or a calibration run gives them):
    ``kv_read_s_per_token`` c; ``frontend_s`` (tokenization, template); the scheduler limits;
    ``draft_tokens`` k proposed per sequence and step, with their costs; ``tokens_per_step`` by
    task type (key ``default`` for the rest): mean tokens a decoding sequence gains per step.
    """

    prefill_tokens_per_s: float
    decode_s_per_token: float
    decode_slowdown_per_seq: float = 0.02
    step_s_per_seq: float | None = None
    kv_read_s_per_token: float = 0.0
    frontend_s: float = 0.0
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 256
    kv_cache_tokens: int = 0
    draft_tokens: float = 0.0
    draft_s_per_step: float = 0.0
    draft_s_per_seq: float = 0.0
    tokens_per_step: tuple[tuple[str, float], ...] = ()

    @property
    def per_seq_s(self) -> float:
        """b: seconds each decode token adds to a step."""
        if self.step_s_per_seq is not None:
            return self.step_s_per_seq
        return self.decode_slowdown_per_seq * self.decode_s_per_token

    def tokens_per_step_for(self, task: str) -> float:
        table = dict(self.tokens_per_step)
        return table.get(task, table.get("default", 1.0))

    def output_token_s(self, task: str, batch: int) -> float:
        """Replica seconds one output token of ``task`` takes: its share of a decode step that
        ``batch`` sequences share (speculation: the drafts verified counted in the step, divided
        by the tokens a step yields on that task)."""
        step_s = self.decode_s_per_token + self.per_seq_s * batch * (1 + self.draft_tokens)
        if self.draft_tokens:
            step_s += self.draft_s_per_step + self.draft_s_per_seq * batch
        return step_s / batch / self.tokens_per_step_for(task)

    def replica_s(self, input_tokens: int, output_tokens: int, task: str, batch: int) -> float:
        """Replica seconds a request uses on the step model: its prompt's prefill time plus its
        output tokens' shares of decode steps at ``batch`` sequences."""
        return input_tokens / self.prefill_tokens_per_s + output_tokens * self.output_token_s(task, batch)
