"""The running gateway: its current config, and the parts built from it (replica state, monitor,
upstream connections, telemetry). The app's lifespan builds one and passes it to the handlers;
nothing here is global."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp

from gateway.config.types import DuetConfig, ModelSpec
from gateway.config.watch import ConfigWatcher
from gateway.proxy.forward import Forwarder
from gateway.proxy.http1 import Pool
from gateway.state.breaker import BreakerPolicy
from gateway.state.monitor import ReplicaMonitor
from gateway.state.store import InMemoryStateStore, StateStore, StoreSettings
from gateway.telemetry import Telemetry
from gateway.tokens import ApproxTokenCounter, HfTokenCounter, TokenCounter

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One config and what was built from it, swapped as a whole on reload so a request never
    sees half of an old config and half of a new one."""

    config: DuetConfig
    counters: Mapping[str, TokenCounter]


def build_counters(config: DuetConfig) -> dict[str, TokenCounter]:
    return {name: _counter(model) for name, model in config.models.items()}


def _counter(model: ModelSpec) -> TokenCounter:
    if model.tokenizer.kind == "hf_tokenizer_json" and model.tokenizer.path:
        return HfTokenCounter(model.tokenizer.path)
    return ApproxTokenCounter()


def store_settings(config: DuetConfig) -> StoreSettings:
    breaker = config.state.breaker
    return StoreSettings(
        stale_after_s=config.state.stale_after_s,
        breaker=BreakerPolicy(failure_threshold=breaker.failure_threshold, cooldown_s=breaker.cooldown_s),
    )


class Gateway:
    def __init__(self, config: DuetConfig, *, config_path: str | None = None, store: StateStore | None = None) -> None:
        self.current = Snapshot(config, build_counters(config))
        self.config_path = config_path
        self.store: StateStore = store or InMemoryStateStore(store_settings(config))
        self.telemetry = Telemetry()
        self.telemetry.watch_replicas(lambda: self.current.config.replicas, self.store.snapshot)
        server = config.server
        self._pool = Pool(connect_timeout_s=server.upstream_connect_timeout_s, idle_timeout_s=server.upstream_idle_timeout_s)
        self.forwarder = Forwarder(self._pool, self.store, server.max_attempts)
        # Health checks and scrapes use their own client: they must never queue behind proxied streams.
        self._session: aiohttp.ClientSession | None = None
        self._monitor: ReplicaMonitor | None = None
        self._watcher: ConfigWatcher | None = None

    async def start(self) -> None:
        config = self.current.config
        self._session = aiohttp.ClientSession(auto_decompress=False, skip_auto_headers=("User-Agent",))
        self._monitor = ReplicaMonitor(
            config.replicas, self.store,
            health_interval_s=config.state.health_interval_s,
            scrape_interval_s=config.state.scrape_interval_s,
            timeout_s=config.state.timeout_s,
            client=self._session,
        )
        await self._monitor.start()
        if self.config_path is not None:
            self._watcher = ConfigWatcher(self.config_path, self.apply)
            self._watcher.start()

    async def stop(self) -> None:
        if self._watcher is not None:
            await self._watcher.stop()
        if self._monitor is not None:
            await self._monitor.stop()
        if self._session is not None:
            await self._session.close()
        self._pool.close()
        await self.store.aclose()

    async def apply(self, config: DuetConfig) -> None:
        """Switch to a new, already validated config."""
        self.current = Snapshot(config, build_counters(config))
        if self._monitor is not None:
            await self._monitor.update_replicas(config.replicas)

    async def reload(self) -> bool:
        if self._watcher is None:
            return False
        return await self._watcher.reload()
