"""The usage and cost ledger: per key x model x variant x task and calendar month (UTC),
requests, input and output tokens, cost at the serving variant's price, and the savings receipt's
sums (``gateway.access.receipts.receipt``: GPU-microseconds and nano-dollars spent and had standard served,
requests served fast; integers, so exact in any order)."""

from __future__ import annotations

import calendar
import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.access.receipts.receipt import NO_RECEIPT, Receipt

# Separates a ledger entry's parts in Redis field names; none of the names can contain it.
SEP = "\t"
METRICS = ("requests", "input_tokens", "output_tokens", "cost_usd")
RECEIPT_METRICS = ("gpu_us", "nano_usd", "standard_gpu_us", "standard_nano_usd", "fast_requests")


@dataclass(frozen=True, slots=True)
class Charge:
    """What one finished request adds to the ledger and to its key's token and spend limits."""

    key_id: str
    model: str
    variant: str
    task: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    receipt: Receipt = NO_RECEIPT

    @property
    def entry(self) -> str:
        return SEP.join((self.key_id, self.model, self.variant, self.task))

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def receipt_amounts(self) -> tuple[int, int, int, int, int]:
        """What the charge adds to each of ``RECEIPT_METRICS``, in that order."""
        r = self.receipt
        return r.gpu_us, r.nano_usd, r.standard_gpu_us, r.standard_nano_usd, int(r.fast)


@dataclass(frozen=True, slots=True)
class UsageRow:
    key_id: str
    model: str
    variant: str
    task: str
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    gpu_us: int = 0
    nano_usd: int = 0
    standard_gpu_us: int = 0
    standard_nano_usd: int = 0
    fast_requests: int = 0

    def to_json(self) -> dict[str, object]:
        return {"key_id": self.key_id, "model": self.model, "variant": self.variant, "task": self.task,
                "requests": self.requests, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": round(self.cost_usd, 9),
                "gpu_us": self.gpu_us, "nano_usd": self.nano_usd, "standard_gpu_us": self.standard_gpu_us,
                "standard_nano_usd": self.standard_nano_usd, "fast_requests": self.fast_requests}


def month_of(now: float) -> str:
    """``YYYY-MM`` of a wall-clock time, in UTC."""
    return _month_of_hour(int(now // 3600))


@functools.lru_cache(maxsize=8)
def _month_of_hour(hour: int) -> str:
    """Months start on a whole UTC hour, so the hour decides the month: asked three times a
    request, ``strftime`` once an hour."""
    return time.strftime("%Y-%m", time.gmtime(hour * 3600))


def seconds_to_month_end(now: float) -> float:
    """Seconds from ``now`` until the next UTC month starts (when monthly spend limits reset)."""
    t = time.gmtime(now)
    year, month = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
    return calendar.timegm((year, month, 1, 0, 0, 0)) - now


def rows_from_fields(fields: Iterable[tuple[str, str]], key_id: str | None = None) -> list[UsageRow]:
    """Ledger rows from ``(entry<SEP>metric, value)`` pairs (the Redis hash layout), sorted."""
    totals: dict[str, dict[str, float]] = {}
    for name, value in fields:
        entry, _, metric = name.rpartition(SEP)
        if (metric in METRICS or metric in RECEIPT_METRICS) and (key_id is None or entry.split(SEP, 1)[0] == key_id):
            totals.setdefault(entry, {})[metric] = float(value) if metric == "cost_usd" else int(value)
    rows = []
    for entry, metrics in sorted(totals.items()):
        kid, model, variant, task = entry.split(SEP)
        rows.append(UsageRow(kid, model, variant, task, int(metrics.get("requests", 0)),
                             int(metrics.get("input_tokens", 0)), int(metrics.get("output_tokens", 0)),
                             metrics.get("cost_usd", 0.0), *(int(metrics.get(m, 0)) for m in RECEIPT_METRICS)))
    return rows
