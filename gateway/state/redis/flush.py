"""The background flush of a copy shared through a Redis stream (the prefix index, the sessions'
seats): what this gateway learned waits in a capped outbox, and a task runs the owner's ``sync``
(send the outbox, apply the other gateways' entries) every ``refresh_s``.

Losing entries while Redis is away costs the others a belief (a cache hit, a session's seat), not
correctness, so the outbox keeps at most ``limit`` entries, dropping the oldest with a warning;
a sync that fails is logged once, its recovery once, and the task keeps trying."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from redis.exceptions import RedisError

log = logging.getLogger(__name__)

Entry = TypeVar("Entry")
# XREAD's reply (RESP2's shape): per stream, its name and its entries (id, fields), all bytes.
StreamReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None
# What a sync raises when Redis does not answer, or answers with an entry missing a field.
SYNC_ERRORS = (RedisError, OSError, TimeoutError, KeyError)


class Outbox(Generic[Entry]):
    """Entries to send, oldest first, at most ``limit`` of them. ``what`` names them in the log."""

    __slots__ = ("limit", "_entries", "_what")

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self._entries: list[Entry] = []
        self._what = what

    def __len__(self) -> int:
        return len(self._entries)

    def post(self, entry: Entry) -> None:
        self._entries.append(entry)
        if len(self._entries) > self.limit:
            dropped = len(self._entries) - self.limit
            del self._entries[:dropped]
            log.warning("%s: Redis is behind, %d oldest entries not shared", self._what, dropped)

    def pending(self) -> list[Entry]:
        """What to send now (a copy: entries posted while it is sent wait for the next sync)."""
        return self._entries[:]

    def sent(self, count: int) -> None:
        """The first ``count`` entries of the last ``pending`` reached Redis."""
        del self._entries[:count]


class Flusher:
    """Runs ``sync`` every ``refresh_s`` from ``start`` until ``aclose``. ``what`` names the copy
    in the log, ``meanwhile`` what the gateway does while Redis is away."""

    def __init__(self, sync: Callable[[], Awaitable[None]], refresh_s: float, *, what: str, meanwhile: str) -> None:
        self._sync = sync
        self._refresh_s = refresh_s
        self._what = what
        self._meanwhile = meanwhile
        self._task: asyncio.Task[None] | None = None
        self.failing = False

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._forever(), name=f"duet-{self._what.replace(' ', '-')}-sync")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=1.0)
            self._task = None

    async def _forever(self) -> None:
        while True:
            try:
                await self._sync()
            except SYNC_ERRORS as exc:
                if not self.failing:
                    log.warning("%s: cannot share through Redis (%s); %s", self._what, exc, self._meanwhile)
                self.failing = True
            else:
                if self.failing:
                    log.info("%s: Redis answers again", self._what)
                self.failing = False
            await asyncio.sleep(self._refresh_s)
