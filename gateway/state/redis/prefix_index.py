"""The prefix index shared by several gateways through one Redis stream.

Routing reads the index on every request, synchronously, so each gateway keeps its own
``InMemoryPrefixIndex`` and the gateways tell one another what they learned: every dispatch
(replica, prompt blocks) and every restart seen (replica forgotten) is appended to a capped
stream (``XADD MAXLEN ~``), and a background task reads the others' entries every ``refresh_s``
and applies them (``gateway.state.redis.flush``). A gateway that starts late replays the stream from its beginning, so it knows
what the recent past taught the others. The index is a belief, so losing entries while Redis
is away costs cache hits, not correctness: the outbox is capped and dropped entries are logged.

Restarts: a replica that restarted lost its cache, and one gateway seeing it must make every
gateway treat it as cold, including gateways that missed the sign (a replica down and up again
between two of their requests). The gateway that sees it forgets the replica and raises the
replica's epoch in a sorted set beside the stream (``ZADD GT``: epochs only grow); every sync
reads the epochs and forgets a replica whose epoch passed the one it knew. The epoch is the
restarted vLLM's process start time when known (every gateway seeing the same restart names it
alike, so it is forgotten once), else the wall-clock time it was seen. Each learned entry carries
when it was learned, and an entry learned before its replica's epoch is dropped on arrival: a
gateway that dispatched to the old process and sends its entries late (its outbox, a slow sync)
does not make the new, cold process look warm. (Clocks: gateways and replicas are assumed
NTP-close; a skew of d seconds misjudges only entries learned within d of a restart.)
"""

from __future__ import annotations

import asyncio
import math
import time
from array import array
from collections.abc import Mapping, Sequence
from typing import cast

from gateway.domain import ReplicaState
from gateway.state.prefix_index import InMemoryPrefixIndex, Life
from gateway.state.redis.flush import Flusher, Outbox, StreamReply
from gateway.state.redis.link import RedisLink

LEARN, FORGET = b"l", b"f"


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
        self._timeout_s = timeout_s
        self._epochs_key = f"{prefix}prefix-epochs"
        # Entries to send: (op, replica, packed blocks, time learned or the restart's epoch).
        self._outbox: Outbox[tuple[bytes, bytes, bytes, float]] = Outbox(self.outbox_limit, "prefix index")
        self._epochs: dict[str, float] = {}  # each replica's last restart known here (its epoch)
        self._last_id = b"0-0"
        self._flusher = Flusher(self.sync, refresh_s, what="prefix index", meanwhile="routing on this gateway's own index")

    def cached_blocks(self, replica_id: str, blocks: Sequence[int]) -> int:
        return self._local.cached_blocks(replica_id, blocks)

    def learn(self, replica_id: str, blocks: Sequence[int]) -> None:
        if blocks:
            self._local.learn(replica_id, blocks)
            self._post(LEARN, replica_id, array("q", blocks).tobytes(), time.time())

    def forget(self, replica_id: str) -> None:
        """Treat the replica as cold here and on every gateway sharing the index."""
        self._restart(replica_id, time.time())

    def watch(self, states: Mapping[str, ReplicaState]) -> None:
        for replica_id, life in self._local.restarts(states):
            epoch = epoch_of(life)
            if epoch > self._epochs.get(replica_id, -math.inf):  # else another gateway told of it first
                self._restart(replica_id, epoch)

    def epoch(self, replica_id: str) -> float | None:
        """The replica's last restart known to this gateway (None: none seen)."""
        return self._epochs.get(replica_id)

    def blocks_held(self, replica_id: str) -> int:
        return self._local.blocks_held(replica_id)

    def start(self) -> None:
        self._flusher.start()

    async def aclose(self) -> None:
        await self._flusher.aclose()

    async def sync(self) -> None:
        """Send what this gateway learned and the restarts it saw, then apply what the others did:
        one round trip. Raises RedisError / OSError / TimeoutError when Redis does not answer (the
        outbox is kept)."""
        outbox = self._outbox.pending()
        async with self._link.client.pipeline(transaction=False) as pipe:
            for op, replica, packed, at in outbox:
                pipe.xadd(self._key, {"g": self._me, "o": op, "r": replica, "b": packed, "t": repr(at)},
                          maxlen=self.stream_entries, approximate=True)
                if op == FORGET:
                    pipe.zadd(self._epochs_key, {replica: at}, gt=True)
            pipe.zrange(self._epochs_key, 0, -1, withscores=True)
            pipe.xread({self._key: self._last_id}, count=5_000)
            replies = await asyncio.wait_for(pipe.execute(), self._timeout_s)
        self._outbox.sent(len(outbox))
        epochs = cast(list[tuple[bytes, float]], replies[-2])
        for replica, epoch in epochs:  # first: a restart makes this batch's older entries stale
            self._raise_epoch(replica.decode(), epoch)
        for _, entries in cast(StreamReply, replies[-1]) or ():  # RESP2's shape
            for entry_id, fields in entries:
                self._last_id = entry_id
                if fields.get(b"g") != self._me:
                    self._apply(fields)

    def _apply(self, fields: Mapping[bytes, bytes]) -> None:
        replica = fields.get(b"r", b"").decode()
        at = float(fields.get(b"t", b"inf"))  # an entry without a time (an older gateway's): current
        if fields.get(b"o") == FORGET:
            self._raise_epoch(replica, at)
        elif at >= self._epochs.get(replica, -math.inf):
            self._local.learn(replica, array("q", fields.get(b"b", b"")).tolist())

    def _restart(self, replica_id: str, epoch: float) -> None:
        """Forget the replica here and tell the others (its epoch rises to ``epoch``)."""
        self._local.forget(replica_id)
        self._epochs[replica_id] = max(epoch, self._epochs.get(replica_id, -math.inf))
        self._post(FORGET, replica_id, b"", epoch)

    def _raise_epoch(self, replica_id: str, epoch: float) -> None:
        """Another gateway saw the replica restart: forget it unless this restart is known here."""
        if epoch > self._epochs.get(replica_id, -math.inf):
            self._epochs[replica_id] = epoch
            self._local.forget(replica_id)

    def _post(self, op: bytes, replica_id: str, packed: bytes, at: float) -> None:
        self._outbox.post((op, replica_id.encode(), packed, at))


def epoch_of(life: Life) -> float:
    """A restart's epoch: the new vLLM process's start time when known (the same on every
    gateway), else now."""
    return life.started_at if life.started_at is not None else time.time()
