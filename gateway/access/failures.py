"""Failed authentications per client address: past ``limit`` failures in a minute, an address's
unknown keys are refused with 429 (Retry-After: the rest of its minute) without asking the key
store, while its valid keys keep working (they are checked in memory first). Bounded: at most
``capacity`` addresses are tracked, the least recently failing forgotten first."""

from __future__ import annotations

from collections import OrderedDict

WINDOW_S = 60.0


class FailedAuthLimit:
    """Fixed one-minute windows per address; ``now`` is the caller's clock (monotonic seconds).
    ``limit`` 0 turns the limit off."""

    __slots__ = ("_capacity", "_windows")

    def __init__(self, capacity: int = 10_000) -> None:
        self._capacity = capacity
        # address -> (window start, failures in it)
        self._windows: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._windows)

    def retry_after(self, client: str, limit: int, now: float) -> float | None:
        """Seconds until ``client`` may be told "unknown key" again, or None if it may be now."""
        window = self._windows.get(client)
        if limit <= 0 or window is None:
            return None
        start, failures = window
        if now - start >= WINDOW_S:
            del self._windows[client]
            return None
        return WINDOW_S - (now - start) if failures >= limit else None

    def fail(self, client: str, now: float) -> None:
        start, failures = self._windows.get(client, (now, 0))
        if now - start >= WINDOW_S:
            start, failures = now, 0
        self._windows[client] = (start, failures + 1)
        self._windows.move_to_end(client)
        while len(self._windows) > self._capacity:
            self._windows.popitem(last=False)
