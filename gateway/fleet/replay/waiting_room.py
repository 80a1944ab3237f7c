"""The gateway's waiting room in virtual time. A request that must wait suspends its coroutine
(``wait`` yields a ``Suspend`` to the replay loop, which parks it here); the loop resumes it with
True when a finished request woke the room, or with False once its timeout passed in virtual
time. Waiters leave best first: by rank (the director's admission order), then by arrival."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any

Waiting = Coroutine[Any, Any, None]


class Suspend:
    """What a request waiting in the virtual waiting room yields to the replay loop, which resumes
    it with True (woken) or False (its timeout passed in virtual time)."""

    __slots__ = ("rank", "timeout_s")

    def __init__(self, rank: int, timeout_s: float) -> None:
        self.rank, self.timeout_s = rank, timeout_s

    def __await__(self) -> Generator[Suspend, bool, bool]:
        woken = yield self
        return woken


@dataclass(order=True)
class _Waiter:
    rank: int
    seq: int
    until_s: float
    coroutine: Waiting = field(compare=False)


class VirtualWaitingRoom:
    """The director's waiting room (``wait``, ``wake``) and the line of suspended requests the
    replay loop resumes."""

    def __init__(self) -> None:
        self.woken = 0
        self._line: list[_Waiter] = []  # a heap, best first
        self._seq = itertools.count()

    async def wait(self, rank: int, timeout_s: float) -> bool:
        return await Suspend(rank, timeout_s)

    def wake(self, count: int = 1) -> None:
        self.woken += count

    def __len__(self) -> int:
        return len(self._line)

    def park(self, coroutine: Waiting, suspend: Suspend, now: float) -> None:
        """Put the request that yielded ``suspend`` at ``now`` in line until it is woken or times out."""
        heapq.heappush(self._line, _Waiter(suspend.rank, next(self._seq), now + suspend.timeout_s, coroutine))

    def next_timeout_s(self) -> float:
        """When the first waiter's timeout passes (infinity: nobody waits)."""
        return min((w.until_s for w in self._line), default=math.inf)

    def pop_woken(self) -> Waiting | None:
        """The best waiter, if a wake is owed and anyone waits (each wake lets one go); None
        clears the wakes that found nobody."""
        if self.woken and self._line:
            self.woken -= 1
            return heapq.heappop(self._line).coroutine
        self.woken = 0
        return None

    def take_timed_out(self, now: float) -> list[Waiting]:
        """The waiters whose timeout passed by ``now``, in the order they joined the heap."""
        due = [w for w in self._line if w.until_s <= now]
        self._line = [w for w in self._line if w.until_s > now]
        heapq.heapify(self._line)
        return [w.coroutine for w in due]

    def take_all(self) -> list[Waiting]:
        """Everyone in line, best first (the fleet changed: each re-plans once)."""
        line, self._line = sorted(self._line), []
        return [w.coroutine for w in line]
