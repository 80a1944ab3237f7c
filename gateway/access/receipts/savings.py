"""The savings report: the ledger's receipt sums (``gateway.access.receipts.receipt``) per key and per
tenant over whole UTC months, and the online-parity verdicts beside them (what the fast variants
were allowed to serve, and where parity revoked a task).

Pure: ledger rows, the keys' tenants and the policy in, a report out. Every sum is of integers
(GPU-microseconds, nano-dollars), so the report is exactly the ledger's, whichever gateway served.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gateway.access.ledger import UsageRow
from gateway.access.receipts.receipt import MICRO, NANO
from gateway.domain import Variant, VariantKind
from gateway.errors import InvalidRequest

NO_TENANT = "-"  # the tenant of a key made without one
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


@dataclass(frozen=True, slots=True)
class Savings:
    """One key's (or tenant's, or everyone's) receipt totals over the period."""

    requests: int = 0
    fast_requests: int = 0
    gpu_us: int = 0
    nano_usd: int = 0
    standard_gpu_us: int = 0
    standard_nano_usd: int = 0

    @staticmethod
    def of(row: UsageRow) -> Savings:
        return Savings(row.requests, row.fast_requests, row.gpu_us, row.nano_usd, row.standard_gpu_us,
                       row.standard_nano_usd)

    def __add__(self, other: Savings) -> Savings:
        return Savings(self.requests + other.requests, self.fast_requests + other.fast_requests,
                       self.gpu_us + other.gpu_us, self.nano_usd + other.nano_usd,
                       self.standard_gpu_us + other.standard_gpu_us, self.standard_nano_usd + other.standard_nano_usd)

    @property
    def saved_nano_usd(self) -> int:
        return self.standard_nano_usd - self.nano_usd

    def to_json(self) -> dict[str, object]:
        """Seconds and dollars, plus the exact integers they came from."""
        standard = self.standard_nano_usd
        return {
            "requests": self.requests, "fast_requests": self.fast_requests,
            "fast_share": round(self.fast_requests / self.requests, 6) if self.requests else 0.0,
            "gpu_seconds": self.gpu_us / MICRO, "gpu_usd": self.nano_usd / NANO,
            "standard_gpu_seconds": self.standard_gpu_us / MICRO, "standard_gpu_usd": standard / NANO,
            "saved_usd": self.saved_nano_usd / NANO,
            "saved_share": round(self.saved_nano_usd / standard, 6) if standard else 0.0,
            "gpu_us": self.gpu_us, "nano_usd": self.nano_usd, "standard_gpu_us": self.standard_gpu_us,
            "standard_nano_usd": standard,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where a fast variant stood on a task type over the period: ``revoked`` (online parity found
    a loss and took the task away in the period, at ``revised_at``), ``opened`` (parity held for
    a shadow variant and the task opened on it, at ``revised_at``), else as the policy stands:
    ``kept`` (allowed: it serves the task as well as standard) or ``not allowed``. With the online
    test's conclusion and pairs where the answering gateway runs one."""

    variant: str
    task: str
    status: str
    conclusion: str | None = None
    pairs: int = 0
    revised_at: float | None = None

    def to_json(self) -> dict[str, object]:
        return {"variant": self.variant, "task": self.task, "status": self.status, "conclusion": self.conclusion,
                "pairs": self.pairs, "revised_at": self.revised_at}


def months_between(since: str, until: str) -> list[str]:
    """The months ``since`` .. ``until`` (``YYYY-MM``, both included); InvalidRequest naming the
    parameter when either is malformed or ``since`` is later."""
    bounds = []
    for name, month in (("since", since), ("month", until)):
        matched = _MONTH.match(month)
        if matched is None:
            raise InvalidRequest(f"'{month}' is not a month: write YYYY-MM (for example 2026-12).", param=name)
        bounds.append(int(matched.group(1)) * 12 + int(matched.group(2)) - 1)
    first, last = bounds
    if first > last:
        raise InvalidRequest(f"since ({since}) is after the last month ({until}).", param="since")
    return [f"{m // 12:04d}-{m % 12 + 1:02d}" for m in range(first, last + 1)]


def by_key(rows: Iterable[UsageRow]) -> dict[str, Savings]:
    """Totals per key id, sorted by id."""
    totals: dict[str, Savings] = {}
    for row in rows:
        totals[row.key_id] = totals.get(row.key_id, Savings()) + Savings.of(row)
    return dict(sorted(totals.items()))


def by_tenant(keys: Mapping[str, Savings], tenants: Mapping[str, str]) -> dict[str, Savings]:
    """Per-key totals summed per tenant (``tenants``: key id -> tenant; missing: ``NO_TENANT``)."""
    totals: dict[str, Savings] = {}
    for key_id, savings in keys.items():
        tenant = tenants.get(key_id) or NO_TENANT
        totals[tenant] = totals.get(tenant, Savings()) + savings
    return dict(sorted(totals.items()))


def total(parts: Iterable[Savings]) -> Savings:
    return sum(parts, Savings())


def verdicts(variants: Iterable[Variant], tasks: Sequence[str], online: Mapping[tuple[str, str], tuple[str, int]],
             revised: Mapping[tuple[str, str], tuple[bool, float]]) -> list[Verdict]:
    """Each fast variant's standing per task type. ``online``: (variant key, task) -> (the online
    test's conclusion, pairs), as far as the answering gateway runs online parity; ``revised``:
    (variant key, task) -> (allowed, when) for the period's latest revision (parity's journal)."""
    rows = []
    for variant in variants:
        if variant.kind is VariantKind.FULL:
            continue
        for task in tasks:
            key = (variant.key, task)
            conclusion, pairs = online.get(key, (None, 0))
            allowed, at = revised.get(key, (None, None))
            if allowed is not None:
                status = "opened" if allowed else "revoked"
            elif variant.allows(task):
                status = "kept"
            else:
                status = "revoked" if conclusion == "loss" else "not allowed"
            rows.append(Verdict(variant.key, task, status, conclusion, pairs, at))
    return rows
