"""Per-key limits from the key's tier, and the ledger they are charged with.

- requests per minute: admissions in the last 60 s (``MinuteWindow``: one-second buckets with a
  running total, O(1) per request). Check and charge are one step, so at most
  ``requests_per_min`` requests are admitted in any minute counted in whole seconds, however many
  arrive at once (and, in Redis, whichever gateway they arrive at).
- tokens per minute: charged with actual usage once a response ends, in the same kind of window;
  a request is refused while the last 60 s already reached the limit.
- monthly spend limit (USD): refused once the month's spend plus what requests in flight hold
  (``reservation``: each holds its estimated cost from admission until it ends) reached it;
  resets with the UTC month.

Each admission also reports what the key has left of its per-minute limits (``Admission.headroom``,
read in the same step: the ``x-ratelimit-*`` headers, ``gateway.access.headroom``).

``QuotaBook`` is the interface; ``InMemoryQuotaBook`` serves one gateway, ``RedisQuotaBook``
(``redis_quotas``) all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.access.headroom import NO_HEADROOM, Headroom, WindowLeft
from gateway.access.ledger import METRICS, RECEIPT_METRICS, Charge, UsageRow, month_of, rows_from_fields, seconds_to_month_end
from gateway.access.reservation import Hold
from gateway.access.window import MinuteWindow
from gateway.config.types import Tier

# The spend limit's name where clients and dashboards match on it (a 429's ``param``, the ``limit``
# label of ``duet_rate_limited_total``): the tier's key was ``monthly_budget_usd`` before it became
# ``monthly_spend_limit_usd``, and this name stays so that neither breaks.
SPEND_LIMIT = "monthly_budget_usd"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Which limit refused a request and when trying again can succeed."""

    limit: str  # requests_per_min | tokens_per_min | SPEND_LIMIT
    retry_after_s: float


@dataclass(frozen=True, slots=True)
class Admission:
    """A quota book's answer: the limit that refused the request (None: admitted and counted),
    and what the key has left of its per-minute limits after it."""

    refusal: Refusal | None = None
    headroom: Headroom = NO_HEADROOM


class QuotaBook(Protocol):
    async def admit(self, key_id: str, tier: Tier, now: float, hold: Hold | None = None) -> Admission:
        """Check every limit of ``tier`` and, when none refuses, count the request and hold
        ``hold`` against its spend limit (until ``settle`` or ``release``). One step."""
        ...

    async def settle(self, charge: Charge, now: float, hold: Hold | None = None) -> None:
        """Charge a finished request's tokens and cost to its key and to the ledger, giving back
        what it held."""
        ...

    def release(self, hold: Hold) -> None:
        """Give back what a request refused after admission held (it spent nothing)."""
        ...

    async def usage(self, month: str, key_id: str | None = None) -> Sequence[UsageRow]:
        """The ledger of ``month`` (``YYYY-MM``), for one key or all."""
        ...


class InMemoryQuotaBook:
    """Limits and ledger for one gateway process (lost on restart). Each method is atomic on the
    event loop: nothing awaits inside."""

    def __init__(self) -> None:
        self._admitted: dict[str, MinuteWindow] = {}
        self._tokens: dict[str, MinuteWindow] = {}
        self._spend: dict[tuple[str, str], float] = {}  # (key, month): settled, plus held
        self._ledger: dict[tuple[str, str], dict[str, float]] = {}  # receipt metrics stay ints

    async def admit(self, key_id: str, tier: Tier, now: float, hold: Hold | None = None) -> Admission:
        rpm, tpm = tier.requests_per_min, tier.tokens_per_min
        requests = None if rpm is None else self._window(self._admitted, key_id)
        tokens = None if tpm is None else self._tokens.get(key_id)
        refusal = self._refusal(key_id, tier, now, requests, tokens)
        if refusal is None:
            if requests is not None:
                requests.add(now, 1)
            if hold is not None:
                self._add_spend((hold.key_id, hold.month), hold.usd)
        return Admission(refusal, Headroom(_left(rpm, requests, now), _left(tpm, tokens, now)))

    def _refusal(self, key_id: str, tier: Tier, now: float, requests: MinuteWindow | None,
                 tokens: MinuteWindow | None) -> Refusal | None:
        spend_limit = tier.monthly_spend_limit_usd
        if spend_limit is not None and self._spend.get((key_id, month_of(now)), 0.0) >= spend_limit:
            return Refusal(SPEND_LIMIT, seconds_to_month_end(now))
        if (tpm := tier.tokens_per_min) is not None and tokens is not None and tokens.total(now) >= tpm:
            return Refusal("tokens_per_min", tokens.retry_after(now, tpm))
        if (rpm := tier.requests_per_min) is not None and requests is not None and requests.total(now) >= rpm:
            return Refusal("requests_per_min", requests.retry_after(now, rpm))
        return None

    @staticmethod
    def _window(windows: dict[str, MinuteWindow], key_id: str) -> MinuteWindow:
        window = windows.get(key_id)
        if window is None:
            window = windows[key_id] = MinuteWindow()
        return window

    async def settle(self, charge: Charge, now: float, hold: Hold | None = None) -> None:
        if charge.tokens:
            self._window(self._tokens, charge.key_id).add(now, charge.tokens)
        month = month_of(now)
        self._add_spend((charge.key_id, month), charge.cost_usd)
        if hold is not None:
            self.release(hold)
        entry = self._ledger.setdefault((month, charge.entry), dict.fromkeys(METRICS + RECEIPT_METRICS, 0))
        entry["requests"] += 1
        entry["input_tokens"] += charge.input_tokens
        entry["output_tokens"] += charge.output_tokens
        entry["cost_usd"] += charge.cost_usd
        for metric, amount in zip(RECEIPT_METRICS, charge.receipt_amounts, strict=True):
            entry[metric] += amount

    def release(self, hold: Hold) -> None:
        self._add_spend((hold.key_id, hold.month), -hold.usd)

    async def usage(self, month: str, key_id: str | None = None) -> Sequence[UsageRow]:
        fields = [(f"{entry}\t{metric}", str(value)) for (m, entry), metrics in self._ledger.items() if m == month
                  for metric, value in metrics.items()]
        return rows_from_fields(fields, key_id)

    def _add_spend(self, key: tuple[str, str], usd: float) -> None:
        self._spend[key] = max(0.0, self._spend.get(key, 0.0) + usd)  # never below 0 by rounding


def _left(limit: int | None, window: MinuteWindow | None, now: float) -> WindowLeft | None:
    if limit is None:
        return None
    used = 0 if window is None else window.total(now)
    return WindowLeft.of(limit, used, None if window is None else window.newest(), now)
