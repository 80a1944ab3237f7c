"""A declared config -> the same config with every variant's replicas listed by its source."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterable

from gateway.config.pool import InferencePoolDiscovery
from gateway.config.types import DuetConfig
from gateway.discovery.api import DiscoveryFailed, KubernetesApi
from gateway.discovery.kubernetes import KubernetesSource
from gateway.discovery.pool_watch import PoolVariantSource, PoolWatcher
from gateway.discovery.source import ReplicaSource
from gateway.discovery.static import StaticSource
from gateway.domain import Replica

log = logging.getLogger(__name__)


def sources_for(config: DuetConfig, api: KubernetesApi | None,
                pool: Callable[[InferencePoolDiscovery], PoolWatcher] | None = None) -> list[ReplicaSource]:
    """One source per variant: its model's InferencePool (through ``pool``, the watcher of a
    target), Kubernetes where the variant says ``discovery``, else the static list."""
    targets = {(t.model, t.variant): t for t in config.discovery}
    pools = {p.model: p for p in config.pools}
    sources: list[ReplicaSource] = []
    for model in config.models.values():
        for variant in model.variants:
            target = targets.get((model.name, variant))
            if model.name in pools:
                if pool is None:
                    raise DiscoveryFailed(f"models.{model.name}.inference_pool needs the Kubernetes API")
                sources.append(PoolVariantSource(pool(pools[model.name]), variant))
            elif target is None:
                sources.append(StaticSource(model.name, variant, tuple(r for r in model.replicas if r.variant == variant)))
            elif api is None:
                raise DiscoveryFailed(f"models.{model.name}.variants.{variant}.discovery needs the Kubernetes API")
            else:
                sources.append(KubernetesSource(target, api))
    return sources


def with_replicas(config: DuetConfig, replicas: Iterable[Replica]) -> DuetConfig:
    """``config`` whose models list exactly ``replicas`` (each under its own model)."""
    listed = tuple(replicas)
    models = {
        name: dataclasses.replace(model, replicas=tuple(r for r in listed if r.model == name))
        for name, model in config.models.items()
    }
    return dataclasses.replace(config, models=models)


class Discovery:
    """Resolves configs; a source that fails keeps its last known list (empty before the first
    success), so an API server hiccup never empties a running gateway."""

    def __init__(self, api: KubernetesApi | None) -> None:
        self._api = api
        self._last: dict[tuple[str, str], tuple[Replica, ...]] = {}
        self._failing: set[tuple[str, str]] = set()
        self._watchers: dict[InferencePoolDiscovery, PoolWatcher] = {}
        # Set when a pool's members change: the discovery loop resolves at once rather than at its interval.
        self.changed = asyncio.Event()

    async def resolve(self, declared: DuetConfig) -> DuetConfig:
        for gone in set(self._watchers) - set(declared.pools):  # a reload dropped or changed the pool
            await self._watchers.pop(gone).stop()
        lists = await asyncio.gather(*(self._list(source) for source in sources_for(declared, self._api, self._watcher)))
        return with_replicas(declared, (replica for listed in lists for replica in listed))

    async def close(self) -> None:
        """Stop every pool's watch."""
        for watcher in self._watchers.values():
            await watcher.stop()
        self._watchers.clear()

    def _watcher(self, target: InferencePoolDiscovery) -> PoolWatcher:
        if target not in self._watchers:
            assert self._api is not None  # sources_for asks only with an API
            self._watchers[target] = watcher = PoolWatcher(target, self._api, self.changed.set)
            watcher.start()
        return self._watchers[target]

    async def _list(self, source: ReplicaSource) -> tuple[Replica, ...]:
        key = (source.model, source.variant)
        try:
            replicas = await source.list_replicas()
        except DiscoveryFailed as exc:
            if key not in self._failing:
                self._failing.add(key)
                log.warning("discovery of %s/%s failed, keeping %d known replica(s): %s", *key, len(self._last.get(key, ())), exc)
            return self._last.get(key, ())
        if key in self._failing:
            self._failing.discard(key)
            log.info("discovery of %s/%s works again (%d replica(s))", *key, len(replicas))
        self._last[key] = replicas
        return replicas
