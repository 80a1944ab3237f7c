"""Replicas found in Kubernetes: the ready endpoints of the EndpointSlices whose labels match.

The EndpointSlice controller copies a Service's labels onto its slices, so the label selector of
the vLLM Services (``duet.dev/model=...,duet.dev/variant=...``) selects their slices directly.
An endpoint counts while its ``ready`` condition is not false (absent means ready, per the API);
terminating pods drop out. Each replica is named after its pod, so a pod keeps its state (EWMA,
breaker) across refreshes and a replaced pod starts fresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.config.types import KubernetesDiscovery
from gateway.discovery.api import DiscoveryFailed, KubernetesApi
from gateway.domain import EngineConfig, Replica

SLICES_PATH = "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"


class KubernetesSource:
    """Lists one variant's replicas through the API server."""

    def __init__(self, target: KubernetesDiscovery, api: KubernetesApi) -> None:
        self.target = target
        self._api = api

    @property
    def model(self) -> str:
        return self.target.model

    @property
    def variant(self) -> str:
        return self.target.variant

    async def list_replicas(self) -> tuple[Replica, ...]:
        """Every ready endpoint of the variant: one list per engine group (each group's Service
        carries its group label), each endpoint with its group's engine."""
        namespace = self.target.namespace or self._api.settings.namespace
        found: list[Replica] = []
        for selector, engine in self.target.selections:
            body = await self._api.get_json(SLICES_PATH.format(namespace=namespace), {"labelSelector": selector})
            found += replicas_from_slices(body, self.target, engine)
        return tuple(sorted(found, key=lambda replica: replica.id))


def replicas_from_slices(body: Mapping[str, Any], target: KubernetesDiscovery,
                         engine: EngineConfig | None = None) -> tuple[Replica, ...]:
    """The ready endpoints of an ``EndpointSliceList`` as replicas running ``engine`` (None:
    the variant's), sorted by id (pure)."""
    if body.get("kind") not in (None, "EndpointSliceList"):
        raise DiscoveryFailed(f"expected an EndpointSliceList, got {body.get('kind')!r}")
    found: dict[str, Replica] = {}
    for item in body.get("items") or ():
        ipv6 = item.get("addressType") == "IPv6"
        for endpoint in item.get("endpoints") or ():
            if not _ready(endpoint) or not endpoint.get("addresses"):
                continue
            address = endpoint["addresses"][0]
            host = f"[{address}]" if ipv6 else address
            name = (endpoint.get("targetRef") or {}).get("name") or address
            rid = f"{target.model}/{target.variant}/{name}"
            found[rid] = Replica(id=rid, model=target.model, variant=target.variant, url=f"http://{host}:{target.port}",
                                 engine=target.engine if engine is None else engine)
    return tuple(found[rid] for rid in sorted(found))


def _ready(endpoint: Mapping[str, Any]) -> bool:
    conditions = endpoint.get("conditions") or {}
    return conditions.get("ready") is not False and conditions.get("terminating") is not True
