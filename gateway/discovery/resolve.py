"""A declared config -> the same config with every variant's replicas listed by its source."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterable

from gateway.config.types import DuetConfig
from gateway.discovery.api import DiscoveryFailed, KubernetesApi
from gateway.discovery.kubernetes import KubernetesSource
from gateway.discovery.source import ReplicaSource
from gateway.discovery.static import StaticSource
from gateway.domain import Replica

log = logging.getLogger(__name__)


def sources_for(config: DuetConfig, api: KubernetesApi | None) -> list[ReplicaSource]:
    """One source per variant: Kubernetes where the config says ``discovery``, else the static list."""
    targets = {(t.model, t.variant): t for t in config.discovery}
    sources: list[ReplicaSource] = []
    for model in config.models.values():
        for variant in model.variants:
            target = targets.get((model.name, variant))
            if target is None:
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

    async def resolve(self, declared: DuetConfig) -> DuetConfig:
        lists = await asyncio.gather(*(self._list(source) for source in sources_for(declared, self._api)))
        return with_replicas(declared, (replica for listed in lists for replica in listed))

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
