"""The gateway's waiting room: requests that found every replica full wait here in line, by
priority then arrival, each until a slot frees or its deadline passes.

Woken by events, not by polling: a finished request wakes the first in line (``wake``); when the
woken request still finds no slot (the slot was on another model's replica, say) it steps back
into its place and passes the wake to the next in line, so a wake moves down the line once at
most and stops at the first request it lets go. Replica state also changes without a finish
here (a scrape, another gateway's requests), so the first in line alone re-checks every
``RECHECK_S``; the others wait for a wake. Under overload that is one re-plan per finish and
four per second, where every waiter re-planning every 0.25 s made 4,000 a second for 1,000
waiters.

``Waiting`` is what the director needs of it; a replay supplies one that waits in virtual time.
A request's *place* (``place_in_line``) is its priority rank then its arrival, one int: lower
places go first, and a request keeps its place each time it steps back in."""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable
from typing import Protocol

from gateway.errors import RateLimited

# How often the first in line re-checks the replicas even if no request finished meanwhile.
RECHECK_S = 0.25
_ARRIVAL_BITS = 40


def place_in_line(rank: int, arrival: int) -> int:
    """A request's place: priority ``rank`` (lower first), then ``arrival`` (a counter)."""
    return rank << _ARRIVAL_BITS | arrival & ((1 << _ARRIVAL_BITS) - 1)


class Waiting(Protocol):
    async def wait(self, rank: int, timeout_s: float) -> bool:
        """Until woken (True) or ``timeout_s`` passed (False). ``rank``: the request's place in
        line (``place_in_line``: one per request, lower places are woken first)."""
        ...

    def wake(self, count: int = 1) -> None:
        ...


class WaitingRoom:
    """Bounded (``max_waiting``: a request beyond it is refused 429 at once). ``waited`` is told
    how long each request waited, in seconds, once it leaves the line for good."""

    def __init__(self, max_waiting: int, *, waited: Callable[[float], None] | None = None,
                 recheck_s: float = RECHECK_S) -> None:
        self._max_waiting = max_waiting
        self._waited = waited or (lambda seconds: None)
        self._recheck_s = recheck_s
        self._places: list[int] = []  # in line, sorted
        self._waiters: dict[int, asyncio.Future[bool]] = {}  # result: pass the wake on if unused
        self._since: dict[int, float] = {}  # when each place first came in
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def __len__(self) -> int:
        return len(self._places)

    async def wait(self, rank: int, timeout_s: float) -> bool:
        """True when woken, False after ``timeout_s``. ``rank``: the request's place in line
        (``place_in_line``), the same each time it steps back in. Raises RateLimited when full."""
        place = rank
        if len(self._places) >= self._max_waiting:
            raise RateLimited("The gateway's queue is full; retry later.", retry_after_s=1.0)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        bisect.insort(self._places, place)
        self._waiters[place] = future
        self._since.setdefault(place, time.monotonic())
        self._arm(loop)
        try:
            async with asyncio.timeout(timeout_s):
                passes_on = await future
        except TimeoutError:
            self._left(place)
            return False
        except BaseException:
            self._left(place)
            raise
        loop.call_soon(self._after_wake, place, passes_on)
        return True

    def wake(self, count: int = 1) -> None:
        """Let the first ``count`` in line re-check (a request finished: a slot may be free)."""
        woken = 0
        while woken < count and self._places:
            woken += self._release(0, passes_on=True)

    def _release(self, index: int, *, passes_on: bool) -> bool:
        """Wake the request at ``index`` in line; False if it was already going. A wait whose
        deadline passed or whose task was cancelled has its future cancelled at once, but leaves
        the line only when its task next runs: a wake in between must not land on it (asyncio
        refuses a result on a cancelled future) and goes to the next in line instead."""
        place = self._places.pop(index)
        future = self._waiters.pop(place)
        if future.done():
            return False
        future.set_result(passes_on)
        return True

    def _release_from(self, index: int, *, passes_on: bool) -> None:
        """Wake the first request still waiting at or after ``index`` in line."""
        while index < len(self._places) and not self._release(index, passes_on=passes_on):
            pass

    def _after_wake(self, place: int, passes_on: bool) -> None:
        """Runs once the woken request re-planned: back in line means the slot was of no use to
        it, so the next in line gets the wake; gone means it went (or was refused)."""
        if place not in self._waiters:
            self._observe(place)
            return
        if passes_on:
            self._release_from(bisect.bisect_right(self._places, place), passes_on=True)

    def _left(self, place: int) -> None:
        """A request left the line without a wake (its deadline, or its client went away)."""
        if self._waiters.pop(place, None) is not None:
            self._places.pop(bisect.bisect_left(self._places, place))
        self._observe(place)

    def _observe(self, place: int) -> None:
        since = self._since.pop(place, None)
        if since is not None:
            self._waited(time.monotonic() - since)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the re-check timer unless it runs (on this loop: one left on a closed loop never fires)."""
        if (self._timer is None or self._timer_loop is not loop) and self._places:
            self._timer, self._timer_loop = loop.call_later(self._recheck_s, self._recheck, loop), loop

    def _recheck(self, loop: asyncio.AbstractEventLoop) -> None:
        """The first in line re-checks; its wake is not passed on (that would re-plan the whole
        line every ``RECHECK_S``)."""
        self._timer = None
        self._release_from(0, passes_on=False)
        self._arm(loop)
