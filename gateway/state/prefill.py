"""Prompt tokens this gateway sent to each replica that have not produced a first token yet.

vLLM prefills in arrival order, so a request's time to first token depends on the prompt tokens
queued ahead of it; vLLM's /metrics do not say how many there are, and a scrape a second old
misses the burst that just arrived. The gateway knows exactly what it sent: this ledger counts
it, per replica, in this process (other gateways' requests still show in vLLM's gauges).
"""

from __future__ import annotations

from collections.abc import Mapping


class PrefillBacklog:
    """Mutable counts owned by one gateway's runtime (or one replay); never shared globally."""

    def __init__(self) -> None:
        self._tokens: dict[str, int] = {}

    def add(self, replica_id: str, tokens: int) -> None:
        self._tokens[replica_id] = self._tokens.get(replica_id, 0) + tokens

    def done(self, replica_id: str, tokens: int) -> None:
        """The request's prompt was prefilled (first token) or it ended: its tokens leave."""
        left = self._tokens.get(replica_id, 0) - tokens
        if left > 0:
            self._tokens[replica_id] = left
        else:
            self._tokens.pop(replica_id, None)

    @property
    def tokens(self) -> Mapping[str, int]:
        return self._tokens
