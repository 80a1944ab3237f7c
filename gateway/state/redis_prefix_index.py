"""The prefix index shared by several gateways through one Redis stream.

Routing reads the index on every request, synchronously, so each gateway keeps its own
``InMemoryPrefixIndex`` and the gateways tell one another what they learned: every dispatch
(replica, prompt blocks) and every restart seen (replica forgotten) is appended to a capped
stream (``XADD MAXLEN ~``), and a background task reads the others' entries every ``refresh_s``
and applies them. A gateway that starts late replays the stream from its beginning, so it knows
what the recent past taught the others. The index is a belief, so losing entries while Redis
is away costs cache hits, not correctness: the outbox is capped and dropped entries are logged.
"""

from __future__ import annotations

import asyncio
import logging
from array import array
from collections.abc import Mapping, Sequence
from typing import cast

from redis.exceptions import RedisError

from gateway.domain import ReplicaState
from gateway.state.prefix_index import InMemoryPrefixIndex
from gateway.state.redis_link import RedisLink

log = logging.getLogger(__name__)

LEARN, FORGET = b"l", b"f"
# XREAD's reply: per stream, its name and its entries (id, fields), all bytes.
StreamReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None


class SharedPrefixIndex:
    """``PrefixIndex`` over a Redis stream (see the module docstring). ``gateway_id`` must be unique
    among the gateways sharing ``prefix``; ``timeout_s`` bounds one exchange with Redis."""

    # The stream's length (about: Redis trims whole nodes): minutes of dispatches at thousands a second.
    stream_entries = 200_000
    # What is kept to send while Redis does not answer.
    outbox_limit = 10_000

    def __init__(self, link: RedisLink, blocks_per_replica: int, *, gateway_id: str, prefix: str,
                 refresh_s: float = 0.1, timeout_s: float = 1.0) -> None:
        self._link = link
        self._local = InMemoryPrefixIndex(blocks_per_replica)
        self._me = gateway_id.encode()
        self._key = f"{prefix}prefixes"
        self._refresh_s = refresh_s
        self._timeout_s = timeout_s
        self._outbox: list[tuple[bytes, bytes, bytes]] = []
        self._last_id = b"0-0"
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    def cached_blocks(self, replica_id: str, blocks: Sequence[int]) -> int:
        return self._local.cached_blocks(replica_id, blocks)

    def learn(self, replica_id: str, blocks: Sequence[int]) -> None:
        if blocks:
            self._local.learn(replica_id, blocks)
            self._post(LEARN, replica_id, array("q", blocks).tobytes())

    def forget(self, replica_id: str) -> None:
        self._local.forget(replica_id)
        self._post(FORGET, replica_id, b"")

    def watch(self, states: Mapping[str, ReplicaState]) -> None:
        # Every gateway sees the same shared replica state and forgets on its own: no message.
        self._local.watch(states)

    def blocks_held(self, replica_id: str) -> int:
        return self._local.blocks_held(replica_id)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._sync_forever(), name="duet-prefix-index-sync")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=1.0)
            self._task = None

    async def sync(self) -> None:
        """Send what this gateway learned, then apply what the others did. Raises RedisError /
        OSError / TimeoutError when Redis does not answer (the outbox is kept)."""
        client = self._link.client
        timeout_s = self._timeout_s
        if self._outbox:
            outbox = self._outbox
            async with client.pipeline(transaction=False) as pipe:
                for op, replica, packed in outbox:
                    pipe.xadd(self._key, {"g": self._me, "o": op, "r": replica, "b": packed},
                              maxlen=self.stream_entries, approximate=True)
                await asyncio.wait_for(pipe.execute(), timeout_s)
            del self._outbox[:len(outbox)]
        read = client.xread({self._key: self._last_id}, count=5_000)
        replies = cast(StreamReply, await asyncio.wait_for(read, timeout_s))  # RESP2's shape
        for _, entries in replies or ():
            for entry_id, fields in entries:
                self._last_id = entry_id
                if fields.get(b"g") != self._me:
                    self._apply(fields)

    def _apply(self, fields: Mapping[bytes, bytes]) -> None:
        replica = fields.get(b"r", b"").decode()
        if fields.get(b"o") == FORGET:
            self._local.forget(replica)
        else:
            self._local.learn(replica, array("q", fields.get(b"b", b"")).tolist())

    def _post(self, op: bytes, replica_id: str, packed: bytes) -> None:
        self._outbox.append((op, replica_id.encode(), packed))
        if len(self._outbox) > self.outbox_limit:
            dropped = len(self._outbox) - self.outbox_limit
            del self._outbox[:dropped]
            log.warning("prefix index: Redis is behind, %d oldest entries not shared", dropped)

    async def _sync_forever(self) -> None:
        while True:
            try:
                await self.sync()
            except (RedisError, OSError, TimeoutError) as exc:
                if not self._failing:
                    log.warning("prefix index: cannot reach Redis (%s); routing on this gateway's own index", exc)
                self._failing = True
            else:
                if self._failing:
                    log.info("prefix index: Redis answers again")
                self._failing = False
            await asyncio.sleep(self._refresh_s)
