"""Replicas named in the config file: the list never changes while the config does not."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.domain import Replica


@dataclass(frozen=True, slots=True)
class StaticSource:
    """The configured replicas of one variant, as they are."""

    model: str
    variant: str
    replicas: tuple[Replica, ...]

    async def list_replicas(self) -> tuple[Replica, ...]:
        return self.replicas
