"""Online parity's revisions by month, kept like the ledger: when a task was taken off a fast
variant (or opened on a shadow one), so the savings report can say for its period where quality
was kept and where it was revoked, whichever gateway ran the check. ``InMemoryJournal`` serves
one gateway, ``RedisJournal`` all of them (``{p}parity:{YYYY-MM}``: a hash of
``variant<TAB>task`` -> the month's latest revision, written through the link's queue like a
settle).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.access.ledger import SEP, month_of
from gateway.state.redis.link import RedisLink, Script

Key = tuple[str, str]  # (variant key "model:variant", task type)


@dataclass(frozen=True, slots=True)
class Revised:
    """``variant`` lost (``allowed`` False) or gained ``task`` at wall-clock ``at``."""

    variant: str
    task: str
    allowed: bool
    at: float


class Journal(Protocol):
    def record(self, revised: Revised) -> None:
        """Keep ``revised`` in its month (queued: no wait)."""
        ...

    async def revisions(self, months: Sequence[str]) -> Mapping[Key, Revised]:
        """The latest revision of each (variant, task) over ``months`` (``YYYY-MM``)."""
        ...


class InMemoryJournal:
    def __init__(self) -> None:
        self._months: dict[str, dict[Key, Revised]] = {}

    def record(self, revised: Revised) -> None:
        self._months.setdefault(month_of(revised.at), {})[(revised.variant, revised.task)] = revised

    async def revisions(self, months: Sequence[str]) -> Mapping[Key, Revised]:
        return latest(r for month in months for r in self._months.get(month, {}).values())


# KEYS: the month's hash. ARGV: field, the revision as JSON. Kept 400 days (a year's reports).
RECORD = Script("parity-revision", """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], 400 * 86400)
return 1
""")


class RedisJournal:
    def __init__(self, link: RedisLink, prefix: str) -> None:
        self._link = link
        self._prefix = prefix

    def record(self, revised: Revised) -> None:
        value = json.dumps({"allowed": revised.allowed, "at": revised.at})
        self._link.send(RECORD, [f"{self._prefix}parity:{month_of(revised.at)}"],
                        [SEP.join((revised.variant, revised.task)), value])

    async def revisions(self, months: Sequence[str]) -> Mapping[Key, Revised]:
        found = []
        for month in months:
            for field, value in (await self._link.client.hgetall(f"{self._prefix}parity:{month}")).items():
                variant, _, task = _text(field).partition(SEP)
                data = json.loads(value)
                found.append(Revised(variant, task, bool(data["allowed"]), float(data["at"])))
        return latest(found)


def latest(revisions: Iterable[Revised]) -> dict[Key, Revised]:
    """The newest revision per (variant, task)."""
    newest: dict[Key, Revised] = {}
    for revised in revisions:
        key = (revised.variant, revised.task)
        if key not in newest or revised.at >= newest[key].at:
            newest[key] = revised
    return newest


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
