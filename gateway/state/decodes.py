"""The gateway's ledger of in-flight requests' decode time on each replica: how much more prefill
stall each can take before it misses its budget, and how much it was stalled.

vLLM runs a new prompt's prefill in the same steps as the running sequences' decode, so every
request still running on a replica waits out the whole prefill of each prompt sent there after
it. A long answer spreads that over hundreds of tokens; a six-token answer has five steps and can
miss its TPOT budget on one large prompt. vLLM does not report this, but the gateway knows what
it sent where and what each request was predicted to need. The ledger keeps, per in-flight
request, its slack (budget minus prediction, in milliseconds of stall it can absorb) and the
stall charged to it so far. Each later prompt's prefill is charged to the requests already on its
replica. Routing reads each replica's least slack (the harm a prompt would do there); a finished
request's charged stall tells the latency learner which part of its decode time was other
prompts' prefill rather than the model's error. It sees this gateway's requests only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class DecodeClaim:
    """What a routed request brings to whichever of its ranked replicas takes it: its slack there
    (None: no budget) and its prompt's prefill time there, by replica id."""

    slack_ms: Mapping[str, float | None] = field(default_factory=dict)
    prefill_ms: Mapping[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _InFlight:
    slack_ms: float  # inf: no budget to protect
    stalled_ms: float = 0.0


class DecodeLedger:
    """Mutable ledger owned by one gateway's runtime (or one replay); never shared globally."""

    def __init__(self) -> None:
        self._replicas: dict[str, dict[int, _InFlight]] = {}
        self._tickets = itertools.count()

    def add(self, replica_id: str, slack_ms: float | None, prefill_ms: float) -> int:
        """A request starts on ``replica_id``: its prompt's ``prefill_ms`` stalls every request
        already there, and it joins them with its own ``slack_ms`` (None: no budget). Returns its
        ticket for ``done`` (request ids come from clients and may repeat)."""
        on_replica = self._replicas.setdefault(replica_id, {})
        for other in on_replica.values():
            other.slack_ms -= prefill_ms
            other.stalled_ms += prefill_ms
        ticket = next(self._tickets)
        on_replica[ticket] = _InFlight(math.inf if slack_ms is None else slack_ms)
        return ticket

    def claim(self, replica_id: str, claim: DecodeClaim) -> int:
        """``add`` with what ``claim`` says for ``replica_id``."""
        return self.add(replica_id, claim.slack_ms.get(replica_id), claim.prefill_ms.get(replica_id, 0.0))

    def done(self, replica_id: str, ticket: int) -> float:
        """The request ended or failed there: it leaves, and this returns the stall (ms) that
        prompts sent after it charged to it. A second call for the same ticket returns 0."""
        on_replica = self._replicas.get(replica_id)
        entry = on_replica.pop(ticket, None) if on_replica is not None else None
        if on_replica is not None and not on_replica:
            del self._replicas[replica_id]
        return entry.stalled_ms if entry is not None else 0.0

    @property
    def least_slack(self) -> Mapping[str, float]:
        """Per replica, the least slack (ms) among its in-flight requests that can still meet their
        budgets: one already past its budget has nothing left to protect, one without a budget
        needs no protection."""
        least: dict[str, float] = {}
        for replica_id, on_replica in self._replicas.items():
            slacks = [r.slack_ms for r in on_replica.values() if 0 < r.slack_ms < math.inf]
            if slacks:
                least[replica_id] = min(slacks)
        return least
