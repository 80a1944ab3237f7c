"""A simulator profile as the gateway's speed prior (the ``speed:`` block of a variant in
duet.yaml): the same step model, in the config's terms. What a calibrated deployment would
write from its own measurements, the simulator's profiles give exactly."""

from __future__ import annotations

from typing import Any

from serving.sim.engine.stepcost import expected_tokens_per_step
from serving.sim.profile import Profile


def speed_prior(profile: Profile, time_scale: float = 1.0) -> dict[str, Any]:
    """The ``speed:`` mapping for ``profile``, in wall seconds when the simulator runs
    ``time_scale`` times faster than the hardware it models."""
    step, limits, spec = profile.step, profile.engine, profile.speculation
    prior: dict[str, Any] = {
        "prefill_tokens_per_s": time_scale / step.prefill_s_per_token,
        "decode_s_per_token": step.base_s / time_scale,
        "decode_slowdown_per_seq": step.decode_s_per_token / step.base_s,
        "step_s_per_seq": step.decode_s_per_token / time_scale,
        "kv_read_s_per_token": step.kv_read_s_per_token / time_scale,
        "frontend_s": step.frontend_s / time_scale,
        "max_num_batched_tokens": limits.max_num_batched_tokens,
        "max_num_seqs": limits.max_num_seqs,
        "kv_cache_tokens": limits.kv_cache_tokens,
    }
    if spec is not None:
        default = spec.for_task("default")
        prior.update({
            "draft_tokens": spec.num_speculative_tokens * default.proposal_rate,
            "draft_s_per_step": spec.draft_s_per_step / time_scale,
            "draft_s_per_seq": spec.draft_s_per_seq / time_scale,
            "tokens_per_step": {
                task: round(a.proposal_rate * expected_tokens_per_step(a.acceptance, spec.num_speculative_tokens)
                            + (1.0 - a.proposal_rate), 4)
                for task, a in spec.tasks.items()
            },
        })
    return prior
