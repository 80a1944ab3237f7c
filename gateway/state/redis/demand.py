"""Demand shared through Redis: each gateway sees only its share of a model's traffic, and the
desired-replicas gauge must size the fleet for all of it.

One hash per model and wall-clock second (``{prefix}demand:{model}:{second}``), fields
``a:{task}`` arrivals, ``p:{task}`` their prompt tokens, ``n:{task}`` answers and ``o:{task}``
their output tokens, added to with ``HINCRBY`` and kept for the model's horizon (``EXPIRE``), so
Redis holds at most a window of seconds per model whatever the rate. Nothing on a request's path
waits: counts gather in memory per second and go out every ``flush_s`` through the link's
pipeline (queued while Redis is away, as the link's other writes are). A read sends this
gateway's counts first, then reads the window's hashes with one script in the same pipeline,
and runs the sums through ``DemandMeter``, the arithmetic the in-memory store uses.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence

from gateway.scaling.demand import DemandMeter, Tally, TaskDemand
from gateway.state.redis.link import Arg, RedisLink, Script

# KEYS[1]: one second's hash. ARGV[1]: its time to live in seconds; then field, increment pairs.
ADD = Script("demand-add", """
for i = 2, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 0
""")

# KEYS: the seconds' hashes. Returns each one's HGETALL, in order.
READ = Script("demand-read", """
local out = {}
for i = 1, #KEYS do out[i] = redis.call('HGETALL', KEYS[i]) end
return out
""")

_KINDS = ("a", "p", "n", "o")  # the fields of a Tally, in its order


class SharedDemand:
    """``DemandStore`` summed over every gateway sharing ``prefix``; see the module docstring.
    ``clock``: wall-clock seconds (the gateways' buckets must line up)."""

    def __init__(self, link: RedisLink, *, prefix: str, clock: Callable[[], float] = time.time,
                 flush_s: float = 1.0) -> None:
        self._link = link
        self._prefix = prefix
        self._clock = clock
        self._flush_s = flush_s
        self._started_s = clock()
        # (model, second) -> field -> increment, and each model's horizon: what the next flush sends.
        self._pending: dict[tuple[str, int], dict[str, int]] = {}
        self._horizons: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    def arrived(self, model: str, task: str, prompt_tokens: int, horizon_s: float) -> None:
        self._add(model, task, horizon_s, (("a", 1), ("p", prompt_tokens)))

    def answered(self, model: str, task: str, output_tokens: int, horizon_s: float) -> None:
        self._add(model, task, horizon_s, (("n", 1), ("o", output_tokens)))

    async def demand(self, model: str, windows_s: Sequence[float], horizon_s: float) -> list[dict[str, TaskDemand]]:
        self.flush()  # queued before the read: the read sees this gateway's latest counts
        now = self._clock()
        newest = math.floor(now)
        seconds = list(range(math.floor(now - min(max(windows_s), horizon_s)), newest + 1))
        reply = await self._link.call(READ, [self._key(model, second) for second in seconds], [])
        meter = DemandMeter(horizon_s, started_s=self._started_s)
        for second, flat in zip(seconds, reply, strict=True):
            for task, tally in _tallies(flat).items():
                meter.count(task, float(second), tally)
        return [meter.demand(now, window_s) for window_s in windows_s]

    def flush(self) -> None:
        """Send the counts gathered since the last flush (the link sends them when Redis answers)."""
        pending, self._pending = self._pending, {}
        for (model, second), fields in pending.items():
            args: list[Arg] = [math.ceil(self._horizons[model]) + 2]
            for field, increment in fields.items():
                args += [field, increment]
            self._link.send(ADD, [self._key(model, second)], args)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._flush_forever(), name="duet-demand-flush")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=1.0)
            self._task = None
        self.flush()

    def _add(self, model: str, task: str, horizon_s: float, counts: tuple[tuple[str, int], ...]) -> None:
        self._horizons[model] = horizon_s
        fields = self._pending.setdefault((model, math.floor(self._clock())), {})
        for kind, increment in counts:
            field = f"{kind}:{task}"
            fields[field] = fields.get(field, 0) + increment

    def _key(self, model: str, second: int) -> str:
        return f"{self._prefix}demand:{model}:{second}"

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(self._flush_s)
            self.flush()


def _tallies(flat: Sequence[bytes]) -> dict[str, Tally]:
    """One second's hash (HGETALL's flat reply) as each task's totals."""
    counts: dict[str, list[int]] = {}
    for i in range(0, len(flat) - 1, 2):
        kind, _, task = flat[i].decode().partition(":")
        if kind in _KINDS:
            counts.setdefault(task, [0, 0, 0, 0])[_KINDS.index(kind)] += int(flat[i + 1])
    return {task: Tally(*values) for task, values in counts.items()}
