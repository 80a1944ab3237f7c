"""The discovery interface: one variant's replicas, listed on demand."""

from __future__ import annotations

from typing import Protocol

from gateway.domain import Replica


class ReplicaSource(Protocol):
    """Lists the replicas of one variant (``model``/``variant``) as they are now.

    May raise ``DiscoveryFailed`` when the list cannot be had; callers then keep the last one.
    """

    @property
    def model(self) -> str: ...

    @property
    def variant(self) -> str: ...

    async def list_replicas(self) -> tuple[Replica, ...]: ...
