"""Where each session sits: the variant and replica its last request went to, and its turns
(``gateway.sessions.keep`` decides with them; ``gateway.sessions.shared`` shares them)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Seat:
    """Where a session sits: its variant and the replica that holds its prompt, and its turns."""

    variant: str
    replica: str
    turns: int = 1


class SeatLookup(Protocol):
    """What routing reads and the bookkeeping writes of the seats."""

    def seat(self, key: str) -> Seat | None: ...

    def sit(self, key: str, variant: str, replica: str) -> None: ...


class Sessions:
    """The most recently seen ``capacity`` sessions' seats, per gateway process (least recently
    seen forgotten first). A forgotten session starts over where the router sends it."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._seats: OrderedDict[str, Seat] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seats)

    def seat(self, key: str) -> Seat | None:
        return self._seats.get(key)

    def sit(self, key: str, variant: str, replica: str) -> None:
        """The session's request was sent to ``replica`` of ``variant``."""
        before = self._seats.pop(key, None)
        self._seats[key] = Seat(variant, replica, 1 if before is None else before.turns + 1)
        if len(self._seats) > self._capacity:
            self._seats.popitem(last=False)
