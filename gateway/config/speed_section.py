"""A variant's speed block in duet.yaml (the step model ``gateway.speed.SpeedPrior`` reads) and
the calibration record a measured block carries."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from gateway.config.strict import NonNegative, PositiveFloat, PositiveInt, Strict, default_of
from gateway.speed import SpeedPrior


class MachineLoadSection(Strict):
    """How busy the calibrating machine was during the probe kept (serving.calibration.load):
    the CPU other processes used, in cores (0 .. ``cores``), the share of time the hypervisor
    stole (0 .. 1), the probes made (more than one: the first was busy), and ``busy``: the probe
    kept was still over the quiet limits, so the block may be someone else's load, not the
    replica's speed."""

    others_cores: NonNegative
    steal_share: Annotated[float, Field(ge=0, le=1)]
    cores: PositiveInt
    probes: PositiveInt
    busy: bool

    @model_validator(mode="after")
    def _others_fit_the_machine(self) -> MachineLoadSection:
        if self.others_cores > self.cores:
            raise ValueError(f"others_cores {self.others_cores} is more than the machine's {self.cores} cores")
        return self


class TaskDecodeSection(Strict):
    """One task's request streamed alone by the probe: seconds per output token, tokens per
    chunk, and the share of draft tokens accepted (vLLM's counters; absent: not exported)."""

    decode_s_per_token: PositiveFloat
    tokens_per_chunk: PositiveFloat
    acceptance: Annotated[float, Field(ge=0, le=1)] | None = None


class CalibrationSection(Strict):
    """Where a measured speed block came from (``duet calibrate``, ``duet up``): the replica
    probed, on which hardware class, when, how long the probe took, the mean tokens a decode
    step streamed on the probe's prompts (above 1: speculation), and how busy the machine was
    (absent: not read, as in records made before it was). A speculative variant's probe also
    times each task it prompts (``decode_by_task``): which ``tokens_per_step`` keys that
    measured, which the prior kept, and the factor its step terms were scaled by so that no
    task gains under one token per step (serving.calibration.by_task). A record for readers:
    the gateway routes by the block's values, not by this."""

    hardware_class: Annotated[str, Field(min_length=1)]
    measured_at: Annotated[str, Field(min_length=1)]
    replica: Annotated[str, Field(min_length=1)]
    probe_s: NonNegative
    decode_tokens_per_step: Annotated[float, Field(ge=1.0)] = 1.0
    decode_by_task: dict[str, TaskDecodeSection] = Field(default_factory=dict)
    tokens_per_step_measured: list[str] = Field(default_factory=list)
    tokens_per_step_from_prior: list[str] = Field(default_factory=list)
    step_scaled_for_tasks: Annotated[float, Field(ge=1.0)] = 1.0
    machine_load: MachineLoadSection | None = None


class SpeedSection(Strict):
    """The variant's step model (see gateway.speed.SpeedPrior); only the first two are required."""

    prefill_tokens_per_s: PositiveFloat
    decode_s_per_token: PositiveFloat
    decode_slowdown_per_seq: NonNegative = default_of(SpeedPrior, "decode_slowdown_per_seq")
    step_s_per_seq: NonNegative | None = default_of(SpeedPrior, "step_s_per_seq")
    kv_read_s_per_token: NonNegative = default_of(SpeedPrior, "kv_read_s_per_token")
    frontend_s: NonNegative = default_of(SpeedPrior, "frontend_s")
    max_num_batched_tokens: PositiveInt = default_of(SpeedPrior, "max_num_batched_tokens")
    max_num_seqs: PositiveInt = default_of(SpeedPrior, "max_num_seqs")
    kv_cache_tokens: Annotated[int, Field(ge=0)] = default_of(SpeedPrior, "kv_cache_tokens")
    draft_tokens: Annotated[float, Field(ge=0, le=64)] = default_of(SpeedPrior, "draft_tokens")
    draft_s_per_step: NonNegative = default_of(SpeedPrior, "draft_s_per_step")
    draft_s_per_seq: NonNegative = default_of(SpeedPrior, "draft_s_per_seq")
    tokens_per_step: dict[str, Annotated[float, Field(ge=1.0)]] = Field(default_factory=dict)
    calibration: CalibrationSection | None = None
