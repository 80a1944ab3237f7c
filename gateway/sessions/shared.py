"""Session seats shared by several gateways through one Redis stream, as the prefix index is
(``gateway.state.redis.prefix_index``, with the same background flush:
``gateway.state.redis.flush``): routing reads a local copy synchronously; every seat
taken here is appended to a capped stream, and the others' are applied every ``refresh_s``. A
conversation whose turns land on different gateways then keeps its variant and replica; a turn
that arrives within ``refresh_s`` of the previous one on another gateway may not see it yet.
"""

from __future__ import annotations

import asyncio
from typing import cast

from gateway.sessions.seats import Seat, Sessions
from gateway.state.redis.flush import Flusher, Outbox, StreamReply
from gateway.state.redis.link import RedisLink


class SharedSessions:
    """``Sessions`` over a Redis stream. ``gateway_id`` must be unique among the gateways sharing
    ``prefix``; ``timeout_s`` bounds one exchange with Redis."""

    stream_entries = 200_000
    outbox_limit = 10_000

    def __init__(self, link: RedisLink, capacity: int, *, gateway_id: str, prefix: str,
                 refresh_s: float = 0.1, timeout_s: float = 1.0) -> None:
        self._link = link
        self._local = Sessions(capacity)
        self._me = gateway_id.encode()
        self._key = f"{prefix}seats"
        self._timeout_s = timeout_s
        self._outbox: Outbox[tuple[bytes, bytes, bytes]] = Outbox(self.outbox_limit, "sessions")
        self._last_id = b"0-0"
        self._flusher = Flusher(self.sync, refresh_s, what="sessions", meanwhile="this gateway's own seats apply")

    def __len__(self) -> int:
        return len(self._local)

    def seat(self, key: str) -> Seat | None:
        return self._local.seat(key)

    def sit(self, key: str, variant: str, replica: str) -> None:
        self._local.sit(key, variant, replica)
        self._outbox.post((key.encode(), variant.encode(), replica.encode()))

    def start(self) -> None:
        self._flusher.start()

    async def aclose(self) -> None:
        await self._flusher.aclose()

    async def sync(self) -> None:
        """Send the seats taken here, then take the others'. Raises RedisError / OSError /
        TimeoutError when Redis does not answer (the outbox is kept)."""
        client = self._link.client
        if outbox := self._outbox.pending():
            async with client.pipeline(transaction=False) as pipe:
                for key, variant, replica in outbox:
                    pipe.xadd(self._key, {"g": self._me, "k": key, "v": variant, "r": replica},
                              maxlen=self.stream_entries, approximate=True)
                await asyncio.wait_for(pipe.execute(), self._timeout_s)
            self._outbox.sent(len(outbox))
        read = client.xread({self._key: self._last_id}, count=5_000)
        replies = cast(StreamReply, await asyncio.wait_for(read, self._timeout_s))  # RESP2's shape
        for _, entries in replies or ():
            for entry_id, fields in entries:
                self._last_id = entry_id
                if fields.get(b"g") != self._me:
                    self._local.sit(fields[b"k"].decode(), fields[b"v"].decode(), fields[b"r"].decode())
