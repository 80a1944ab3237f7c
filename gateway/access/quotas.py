"""Per-key limits from the key's tier, and the ledger they are charged with.

- requests per minute: a sliding log of admission times over the last 60 s. Check and charge are
  one step, so exactly ``requests_per_min`` requests are admitted in any 60 s, however many
  arrive at once (and, in Redis, whichever gateway they arrive at).
- tokens per minute: charged with actual usage once a response ends, in one-second buckets; a
  request is refused while the last 60 s already reached the limit.
- monthly budget (USD): refused once the month's spend reached it; resets with the UTC month.

``QuotaBook`` is the interface; ``InMemoryQuotaBook`` serves one gateway, ``RedisQuotaBook``
(``redis_quotas``) all of them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.access.ledger import METRICS, Charge, UsageRow, month_of, rows_from_fields, seconds_to_month_end
from gateway.config.types import Tier

WINDOW_S = 60.0


@dataclass(frozen=True, slots=True)
class Refusal:
    """Which limit refused a request and when trying again can succeed."""

    limit: str  # requests_per_min | tokens_per_min | monthly_budget_usd
    retry_after_s: float


class QuotaBook(Protocol):
    async def admit(self, key_id: str, tier: Tier, now: float) -> Refusal | None:
        """Check every limit of ``tier`` and, when none refuses, count the request. One step."""
        ...

    async def settle(self, charge: Charge, now: float) -> None:
        """Charge a finished request's tokens and cost to its key and to the ledger."""
        ...

    async def usage(self, month: str, key_id: str | None = None) -> Sequence[UsageRow]:
        """The ledger of ``month`` (``YYYY-MM``), for one key or all."""
        ...


class InMemoryQuotaBook:
    """Limits and ledger for one gateway process (lost on restart). Each method is atomic on the
    event loop: nothing awaits inside."""

    def __init__(self) -> None:
        self._admitted: dict[str, deque[float]] = {}
        self._tokens: dict[str, deque[tuple[float, int]]] = {}
        self._spend: dict[tuple[str, str], float] = {}
        self._ledger: dict[tuple[str, str], dict[str, float]] = {}

    async def admit(self, key_id: str, tier: Tier, now: float) -> Refusal | None:
        budget = tier.monthly_budget_usd
        if budget is not None and self._spend.get((key_id, month_of(now)), 0.0) >= budget:
            return Refusal("monthly_budget_usd", seconds_to_month_end(now))
        if tier.tokens_per_min is not None:
            refusal = self._token_refusal(key_id, tier.tokens_per_min, now)
            if refusal is not None:
                return refusal
        if tier.requests_per_min is not None:
            log = _expire(self._admitted.setdefault(key_id, deque()), now)
            if len(log) >= tier.requests_per_min:
                oldest = log[0] if log else now
                return Refusal("requests_per_min", max(0.0, oldest + WINDOW_S - now))
            log.append(now)
        return None

    async def settle(self, charge: Charge, now: float) -> None:
        if charge.tokens:
            self._tokens.setdefault(charge.key_id, deque()).append((now, charge.tokens))
        month = month_of(now)
        spend_key = (charge.key_id, month)
        self._spend[spend_key] = self._spend.get(spend_key, 0.0) + charge.cost_usd
        entry = self._ledger.setdefault((month, charge.entry), dict.fromkeys(METRICS, 0.0))
        entry["requests"] += 1
        entry["input_tokens"] += charge.input_tokens
        entry["output_tokens"] += charge.output_tokens
        entry["cost_usd"] += charge.cost_usd

    async def usage(self, month: str, key_id: str | None = None) -> Sequence[UsageRow]:
        fields = [(f"{entry}\t{metric}", str(value)) for (m, entry), metrics in self._ledger.items() if m == month
                  for metric, value in metrics.items()]
        return rows_from_fields(fields, key_id)

    def _token_refusal(self, key_id: str, limit: int, now: float) -> Refusal | None:
        spent = self._tokens.setdefault(key_id, deque())
        while spent and spent[0][0] <= now - WINDOW_S:
            spent.popleft()
        used = sum(n for _, n in spent)
        if used < limit:
            return None
        # Wait until enough of the oldest usage leaves the window to drop below the limit.
        for at, n in spent:
            used -= n
            if used < limit:
                return Refusal("tokens_per_min", max(0.0, at + WINDOW_S - now))
        return Refusal("tokens_per_min", WINDOW_S)  # limit 0: never


def _expire(log: deque[float], now: float) -> deque[float]:
    while log and log[0] <= now - WINDOW_S:
        log.popleft()
    return log
