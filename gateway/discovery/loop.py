"""Keeps a running gateway's replica lists current: resolve on an interval, apply on change."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from gateway.config.types import DuetConfig
from gateway.discovery.resolve import Discovery

log = logging.getLogger(__name__)


def refresh_interval_s(config: DuetConfig) -> float | None:
    """The shortest ``refresh_s`` of the config's Kubernetes targets, or ``resync_s`` of its pools
    (whose changes also wake the loop at once); None when it has neither."""
    return min([t.refresh_s for t in config.discovery] + [p.resync_s for p in config.pools], default=None)


class DiscoveryLoop:
    """Every ``interval_s``, or as soon as a pool's members change: resolve the declared config;
    when its replicas differ from the current config's, hand the resolved config to ``on_change``
    (which swaps it in and tells the replica monitor). A reload racing a refresh is corrected by
    the next refresh."""

    def __init__(
        self, discovery: Discovery, *, declared: Callable[[], DuetConfig], current: Callable[[], DuetConfig],
        on_change: Callable[[DuetConfig], Awaitable[None]], interval_s: float,
    ) -> None:
        self._discovery = discovery
        self._declared = declared
        self._current = current
        self._on_change = on_change
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def resolve(self, declared: DuetConfig) -> DuetConfig:
        """``declared`` with its replicas listed now (for a reload)."""
        return await self._discovery.resolve(declared)

    async def refresh(self) -> bool:
        """Resolve once; True when the replica lists changed and were applied."""
        resolved = await self._discovery.resolve(self._declared())
        if resolved.replicas == self._current().replicas:
            return False
        log.info("discovered replicas changed: %s", ", ".join(r.id for r in resolved.replicas) or "none")
        await self._on_change(resolved)
        return True

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="duet-discovery")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._discovery.close()

    async def _run(self) -> None:
        changed = self._discovery.changed
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout=self._interval_s)
            changed.clear()
            await self.refresh()
