"""Keys recently found in no store: a bounded LRU with a time to live, so a repeated bad key is
refused from memory instead of asking the key store again (a Redis round trip per request).

A key's secret is 32 random bytes, so a real key is never presented before it exists: caching
"unknown" cannot hide a key made later. The TTL only bounds how long an entry lives."""

from __future__ import annotations

from collections import OrderedDict


class UnknownKeys:
    """At most ``capacity`` key hashes, each remembered for ``ttl_s`` seconds. ``now`` is the
    caller's clock (monotonic seconds)."""

    __slots__ = ("_capacity", "_ttl_s", "_expiry")

    def __init__(self, capacity: int = 10_000, ttl_s: float = 60.0) -> None:
        self._capacity = capacity
        self._ttl_s = ttl_s
        self._expiry: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._expiry)

    def known_unknown(self, key_hash: str, now: float) -> bool:
        """Whether ``key_hash`` was found in no store less than ``ttl_s`` ago."""
        expiry = self._expiry.get(key_hash)
        if expiry is None:
            return False
        if expiry <= now:
            del self._expiry[key_hash]
            return False
        self._expiry.move_to_end(key_hash)
        return True

    def add(self, key_hash: str, now: float) -> None:
        self._expiry[key_hash] = now + self._ttl_s
        self._expiry.move_to_end(key_hash)
        while len(self._expiry) > self._capacity:
            self._expiry.popitem(last=False)

    def clear(self) -> None:
        self._expiry.clear()
