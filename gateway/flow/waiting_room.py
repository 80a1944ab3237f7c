"""The gateway's waiting room: requests that found every replica full wait here by priority
(then arrival), each until a slot frees or its deadline passes.

``Waiting`` is what the director needs of it; a replay supplies one that waits in virtual time."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field
from typing import Protocol

from gateway.errors import RateLimited

# How often a waiting request re-checks the replicas even if no request finished meanwhile.
RECHECK_S = 0.25


class Waiting(Protocol):
    async def wait(self, rank: int, timeout_s: float) -> bool:
        """Until woken (True) or ``timeout_s`` passed (False); lower ranks are woken first."""
        ...

    def wake(self, count: int = 1) -> None:
        ...


@dataclass(order=True)
class _Waiter:
    rank: int
    seq: int
    future: asyncio.Future[None] = field(compare=False)


class WaitingRoom:
    """Bounded; FIFO within a priority rank. ``wake`` is called whenever a request finishes."""

    def __init__(self, max_waiting: int) -> None:
        self._max_waiting = max_waiting
        self._heap: list[_Waiter] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    async def wait(self, rank: int, timeout_s: float) -> bool:
        """True when woken, False after ``timeout_s`` (the caller re-checks: replica state also
        changes without a finish here, e.g. at a scrape). Raises RateLimited when full."""
        if len(self._heap) >= self._max_waiting:
            raise RateLimited("The gateway's queue is full; retry later.", retry_after_s=1.0)
        waiter = _Waiter(rank, next(self._seq), asyncio.get_running_loop().create_future())
        heapq.heappush(self._heap, waiter)
        try:
            async with asyncio.timeout(timeout_s):
                await waiter.future
            return True
        except TimeoutError:
            return False
        finally:
            if not waiter.future.done():
                waiter.future.cancel()
            self._drop_done()

    def wake(self, count: int = 1) -> None:
        """Let the ``count`` best waiters re-try (a request finished: a slot may be free)."""
        while count and self._heap:
            waiter = heapq.heappop(self._heap)
            if not waiter.future.done():
                waiter.future.set_result(None)
                count -= 1

    def _drop_done(self) -> None:
        if any(w.future.done() for w in self._heap):
            self._heap = [w for w in self._heap if not w.future.done()]
            heapq.heapify(self._heap)
