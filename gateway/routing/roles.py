"""Engine roles as routing reads them: a replica's role (the filter: until a request can be split
across a prefill and a decode replica, a client's request goes whole to a replica that both
prefills and decodes) and its scheduler limits (what the latency model chunks prompts by).
Pure: reads the role the replica reports, else the one its config gives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import Candidate, EngineRole, RequestProfile

ENGINE_ROLE = "engine-role"


def chunk_budget(candidate: Candidate) -> int:
    """The tokens one of the replica's steps computes: as the replica reports it (its /metrics,
    like its role), else its own ``max_num_batched_tokens`` when its config sets one (what a
    replay sees), else its variant's prior."""
    return (candidate.state.chunk_budget or candidate.replica.engine.max_num_batched_tokens
            or candidate.variant.speed.max_num_batched_tokens)


def max_batch(candidate: Candidate) -> int:
    """The replica's largest batch: its own ``max_num_seqs``, else its variant's prior."""
    return candidate.replica.engine.max_num_seqs or candidate.variant.speed.max_num_seqs


def role_of(candidate: Candidate) -> EngineRole:
    """The replica's role: as it reports it (its /metrics), else as configured."""
    return candidate.state.role or candidate.replica.engine.role


@dataclass(frozen=True, slots=True)
class EngineRoleFilter:
    """Keeps replicas that serve a request whole (role ``both``). A ``prefill`` replica would
    never write the answer and a ``decode`` replica takes only KV handed to it, so neither may
    take a client's request directly."""

    name: str = ENGINE_ROLE
    type: ClassVar[str] = ENGINE_ROLE

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]:
        role = role_of(candidate)
        if role is EngineRole.BOTH:
            return True, "prefills and decodes"
        return False, f"{role.value}-only replica (a client's request needs both)"
