"""The demand store: what traffic each autoscaled model gets, per task type, for the
desired-replicas gauge (``gateway.autoscaling.gauge``). The request lifecycle writes it
(``gateway.autoscaling.demand_keeper``); the gauge reads it over two windows at each scrape.

``InMemoryDemand`` is one gateway's (and the replay's, on its virtual clock), over
``DemandMeter``; ``SharedDemand`` (``gateway.state.redis.demand``) sums every gateway sharing
Redis, since each sees only its share of the traffic. Writes never wait: they are counted in
memory (and, shared, sent in the background). ``horizon_s`` is the longest window the model's
gauge reads (its ``autoscaling.rate_window_s``, passed with every call so a reload that changes
it applies).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from gateway.scaling.demand import DemandMeter, TaskDemand


class DemandStore(Protocol):
    def arrived(self, model: str, task: str, prompt_tokens: int, horizon_s: float) -> None:
        """A request of ``task`` with ``prompt_tokens`` came for ``model`` (now, on the store's clock)."""
        ...

    def answered(self, model: str, task: str, output_tokens: int, horizon_s: float) -> None:
        """A request of ``task`` ended with an answer of ``output_tokens``."""
        ...

    async def demand(self, model: str, windows_s: Sequence[float], horizon_s: float) -> list[dict[str, TaskDemand]]:
        """``model``'s demand per task over each of ``windows_s``, up to now. A shared store
        raises ``StoreUnavailable`` (``gateway.state.redis.link``) when Redis cannot answer."""
        ...


class InMemoryDemand:
    """One ``DemandMeter`` per model, on ``clock`` (seconds). A meter whose horizon changed (a
    reload) starts again: it then reads the time it has seen, as a young meter does."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._meters: dict[str, tuple[float, DemandMeter]] = {}

    def arrived(self, model: str, task: str, prompt_tokens: int, horizon_s: float) -> None:
        now = self._clock()
        self._meter(model, horizon_s, now).arrived(task, prompt_tokens, now)

    def answered(self, model: str, task: str, output_tokens: int, horizon_s: float) -> None:
        now = self._clock()
        self._meter(model, horizon_s, now).answered(task, output_tokens, now)

    async def demand(self, model: str, windows_s: Sequence[float], horizon_s: float) -> list[dict[str, TaskDemand]]:
        return self.read(model, windows_s, horizon_s)

    def read(self, model: str, windows_s: Sequence[float], horizon_s: float) -> list[dict[str, TaskDemand]]:
        """``demand`` without the await: memory answers at once (the replay, which runs
        synchronously in virtual time, reads its autoscaler's demand so)."""
        now = self._clock()
        meter = self._meter(model, horizon_s, now)
        return [meter.demand(now, window_s) for window_s in windows_s]

    def _meter(self, model: str, horizon_s: float, now: float) -> DemandMeter:
        kept = self._meters.get(model)
        if kept is None or kept[0] != horizon_s:
            kept = self._meters[model] = (horizon_s, DemandMeter(horizon_s, started_s=now))
        return kept[1]
