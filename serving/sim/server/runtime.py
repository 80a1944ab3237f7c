"""Drives the engine model in real time on an asyncio loop (scaled by ``time_scale``).

No task loops: one timer callback is armed for the engine's next event; when it fires, the
engine advances to "now" and each request's events go to its own queue. ``time_scale`` 10
runs the model ten times faster than the hardware it simulates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Event, Finished, Refusal, SimRequest


class EngineRuntime:
    """Real-time adapter: virtual seconds = wall seconds since start x ``time_scale``."""

    def __init__(self, engine: Engine, *, time_scale: float = 1.0,
                 observer: Callable[[list[Event]], None] | None = None) -> None:
        self.engine = engine
        self.time_scale = time_scale
        self._observer = observer
        self._queues: dict[str, asyncio.Queue[Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._t0 = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None

    def start(self) -> None:
        """Bind to the running loop; the engine's clock starts at zero now."""
        self._loop = asyncio.get_running_loop()
        self._t0 = self._loop.time()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def now(self) -> float:
        """The engine's virtual time now."""
        assert self._loop is not None, "runtime not started"
        return (self._loop.time() - self._t0) * self.time_scale

    def submit(self, request: SimRequest, queue: asyncio.Queue[Event]) -> Refusal | None:
        """Hand ``request`` to the engine, its events to go to ``queue`` (several requests may
        share one); returns why the engine refused it, or None."""
        self._tick()  # bring the engine to now, so admission sees the current queue
        refusal = self.engine.submit(request, self.now())
        if refusal is None:
            self._queues[request.request_id] = queue
            self._arm()
        return refusal

    def abort(self, request_id: str) -> None:
        """The client is gone: free the request's place in the engine."""
        if request_id in self._queues:
            self.engine.abort(request_id, self.now())
            self._tick()  # delivers Finished(abort), so whoever waits on the queue wakes up

    def set_slowdown(self, factor: float) -> None:
        self.engine.slowdown = factor

    def _tick(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, None
        events = self.engine.advance(self.now())
        if events:
            if self._observer is not None:
                self._observer(events)
            queues = self._queues
            for event in events:
                queue = queues.get(event.request_id)
                if queue is not None:
                    queue.put_nowait(event)
                    if isinstance(event, Finished):
                        del queues[event.request_id]
        self._arm()

    def _arm(self) -> None:
        """Make sure a timer fires at the engine's next event (re-arming if it moved earlier)."""
        at = self.engine.next_event_time()
        if at is None or (self._timer_at is not None and self._timer_at <= at):
            return
        if self._timer is not None:
            self._timer.cancel()
        assert self._loop is not None
        self._timer_at = at
        self._timer = self._loop.call_at(self._t0 + at / self.time_scale, self._tick)
