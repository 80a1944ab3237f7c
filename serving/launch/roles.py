"""A replica's engine role as vLLM arguments: its chunk budget (``--max-num-batched-tokens``),
its largest batch (``--max-num-seqs``), the GPUs it spans (``--tensor-parallel-size``, which
also sets the GPUs the replica takes) and, for disaggregated prefill, ``--kv-transfer-config``
with the KV connector and the role it plays (vLLM's ``KVTransferConfig``: ``kv_producer`` for a
prefill instance, ``kv_consumer`` for a decode instance, ``kv_both`` for one that does either).

The values replace the launch profile's own flags of the same name, so a profile's
``max-num-seqs: 1024`` and a replica's ``max_num_seqs: 256`` give one ``--max-num-seqs 256``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from serving.launch.profile import EngineValue, LaunchProfile

ROLES = ("both", "prefill", "decode")
KV_ROLES = {"both": "kv_both", "prefill": "kv_producer", "decode": "kv_consumer"}


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """A replica's engine beyond its profile: ``role`` (both | prefill | decode), budgets
    (None: the profile's, else vLLM's default) and the KV connector a P/D role needs."""

    role: str = "both"
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    kv_connector: str | None = None
    tensor_parallel_size: int | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role {self.role!r}: one of {', '.join(ROLES)}")
        if self.role != "both" and self.kv_connector is None:
            raise ValueError(f"a {self.role} role needs a kv_connector")

    @property
    def engine_args(self) -> tuple[tuple[str, EngineValue], ...]:
        """The flags (without ``--``) these settings set, in vLLM's spelling."""
        args: list[tuple[str, EngineValue]] = []
        if self.max_num_batched_tokens is not None:
            args.append(("max-num-batched-tokens", self.max_num_batched_tokens))
        if self.max_num_seqs is not None:
            args.append(("max-num-seqs", self.max_num_seqs))
        if self.tensor_parallel_size is not None:
            args.append(("tensor-parallel-size", self.tensor_parallel_size))
        if self.kv_connector is not None:
            args.append(("kv-transfer-config", {"kv_connector": self.kv_connector, "kv_role": KV_ROLES[self.role]}))
        return tuple(args)


def with_engine_args(profile_args: tuple[tuple[str, EngineValue], ...],
                     settings: EngineSettings) -> tuple[tuple[str, EngineValue], ...]:
    """``profile_args`` with the settings' flags in place of the profile's own, new ones last."""
    overrides = dict(settings.engine_args)
    kept = tuple((name, overrides.pop(name, value)) for name, value in profile_args)
    return kept + tuple(overrides.items())


def with_engine(profile: LaunchProfile, settings: EngineSettings) -> LaunchProfile:
    """``profile`` launched with a replica's engine role, budgets and TP size (its GPUs with it)."""
    resources = profile.resources if settings.tensor_parallel_size is None else dataclasses.replace(
        profile.resources, gpus=settings.tensor_parallel_size)
    return dataclasses.replace(profile, engine_args=with_engine_args(profile.engine_args, settings), resources=resources)
