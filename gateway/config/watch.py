"""Hot reload of duet.yaml: on SIGHUP and when the file changes. A new file that does not
validate is refused with a logged error, and the running config stays."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

from gateway.config.load import load_config
from gateway.config.types import DuetConfig
from gateway.errors import ConfigError

log = logging.getLogger(__name__)

Apply = Callable[[DuetConfig], Awaitable[None]]


class ConfigWatcher:
    def __init__(self, path: str | Path, apply: Apply, *, interval_s: float = 1.0) -> None:
        self._path = Path(path)
        self._apply = apply
        self._interval_s = interval_s
        self._digest = self._read_digest()
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.reloads = 0
        self.rejected = 0

    def _read_digest(self) -> bytes | None:
        try:
            return hashlib.sha256(self._path.read_bytes()).digest()
        except OSError:
            return None

    async def reload(self) -> bool:
        """Load the file and apply it if valid. True when the new config is running."""
        async with self._lock:
            self._digest = self._read_digest()
            try:
                config = load_config(self._path)
            except ConfigError as exc:
                self.rejected += 1
                log.error("config reload refused, keeping the running policy: %s", exc)
                return False
            await self._apply(config)
            self.reloads += 1
            log.info("config reloaded from %s", self._path)
            return True

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(self._reload_logged()))
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            log.debug("SIGHUP reload unavailable; file polling only")
        self._task = loop.create_task(self._poll())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            if self._read_digest() not in (self._digest, None):
                await self._reload_logged()

    async def _reload_logged(self) -> None:
        """A reload from the poller or SIGHUP: a failure while applying is logged with its traceback,
        and the watcher keeps watching (one bad reload must not end hot reload for good)."""
        try:
            await self.reload()
        except Exception:
            self.rejected += 1
            log.exception("config reload failed, keeping the running policy")
