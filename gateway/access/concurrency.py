"""Open requests per API key on this gateway, for the tier's ``max_concurrent_requests``.

Counted in the process, not in Redis: the count must go down when a stream ends however it ends
(a crash of this gateway included), which a shared counter cannot promise without leases. With N
gateways a key may hold up to N times its limit; each gateway alone holds it to the limit.
"""

from __future__ import annotations


class OpenRequests:
    """How many requests each key has open now. One per access gate (not global)."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}

    def claim(self, key_id: str, limit: int | None) -> bool:
        """Count one more open request for ``key_id`` unless it already has ``limit`` open
        (``None``: no limit). True when claimed; every claim needs one ``release``."""
        held = self._open.get(key_id, 0)
        if limit is not None and held >= limit:
            return False
        self._open[key_id] = held + 1
        return True

    def release(self, key_id: str) -> None:
        held = self._open.get(key_id, 0) - 1
        if held > 0:
            self._open[key_id] = held
        else:
            self._open.pop(key_id, None)

    def held(self, key_id: str) -> int:
        return self._open.get(key_id, 0)
