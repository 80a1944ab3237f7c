"""A request's mutable progress inside the engine, and a step in flight."""

from __future__ import annotations

from serving.sim.engine.events import SimRequest


class Seq:
    """One request in the engine: how much of its prompt and output is computed, its KV blocks,
    when it was scheduled and produced its first token."""

    __slots__ = (
        "req", "arrival", "ready_at", "target", "generated", "computed", "blocks", "scheduled_at",
        "first_token_at", "cached_tokens", "acceptance", "proposal_rate", "cached_blocks", "done",
        "preemptions", "kv_failed",
    )

    def __init__(self, req: SimRequest, arrival: float, ready_at: float, target: int) -> None:
        self.req = req
        self.arrival = arrival
        self.ready_at = ready_at
        self.target = target
        self.generated = 0
        self.computed = 0
        self.blocks = 0
        self.scheduled_at: float | None = None
        self.first_token_at: float | None = None
        self.cached_tokens = 0
        self.acceptance = 0.0
        self.proposal_rate = 0.0
        self.cached_blocks = 0  # leading prompt blocks already put in the prefix cache
        self.done = False
        self.preemptions = 0
        self.kv_failed = False  # its transferred KV never arrived (recomputed, or failed)


class Step:
    """A step in flight: when it ends, and what each sequence computes in it."""

    __slots__ = ("end", "plan")

    def __init__(self, end: float, plan: list[tuple[Seq, int, int]]) -> None:
        self.end = end
        self.plan = plan  # (sequence, tokens computed, of which speculative drafts)
