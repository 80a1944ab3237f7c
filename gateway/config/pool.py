"""duet.yaml's ``inference_pool`` section: a model whose replicas are the Ready pods of a Gateway
API Inference Extension ``InferencePool`` (``inference.networking.k8s.io/v1``), each pod's
variant read from one of its labels (gateway/discovery/pool_watch.py).

    models:
      smollm2:
        inference_pool:
          name: smollm2               # the InferencePool, in ``namespace`` (default: the pod's own)
          variant_label: duet.dev/variant
        variants: {standard: {...}, fast: {...}}   # no replicas: the pool lists them
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from gateway.domain import EngineConfig

# A Kubernetes object name (DNS-1123 subdomain) and a label key (optional prefix/ then a name).
OBJECT_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"


@dataclass(frozen=True, slots=True)
class InferencePoolDiscovery:
    """Where one model's replicas are found: the pool ``name`` in ``namespace`` (None: the
    gateway's own), the pod label naming each pod's variant, and how the watch is bounded."""

    model: str
    name: str
    namespace: str | None = None
    variant_label: str = "duet.dev/variant"
    # A full relist at least this often, even while the watch streams (bounds what a lost event costs).
    resync_s: float = 300.0
    # The API server ends each watch after this long (``timeoutSeconds``); the next resumes it.
    watch_timeout_s: float = 60.0
    # Wait this long after a failed list or watch before trying again.
    retry_s: float = 2.0
    # Each variant's engine (variant name, engine), sorted: every pod of a variant runs its
    # variant's (one Deployment, one configuration). A pair tuple keeps the value hashable.
    engines: tuple[tuple[str, EngineConfig], ...] = ()
    # A variant with ``engine_groups``: (variant, group, engine) per group, sorted; its pods say
    # their group in ``GROUP_LABEL`` (one Deployment per group), and run that group's engine.
    group_engines: tuple[tuple[str, str, EngineConfig], ...] = ()

    def engine_of(self, variant: str, group: str | None = None) -> EngineConfig | None:
        """The engine of ``variant``'s pods (of ``group``, the pod's group label, where the variant
        has groups); None when the model has no such variant or the variant no such group."""
        groups = {name: engine for v, name, engine in self.group_engines if v == variant}
        if groups:
            return groups.get(group or "")
        return next((engine for name, engine in self.engines if name == variant), None)


def _default(name: str) -> object:
    return InferencePoolDiscovery.__dataclass_fields__[name].default


class InferencePoolSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    name: Annotated[str, Field(pattern=OBJECT_NAME, max_length=253)]
    namespace: Annotated[str, Field(pattern=OBJECT_NAME, max_length=63)] | None = None
    variant_label: Annotated[str, Field(pattern=LABEL_KEY, max_length=317)] = _default("variant_label")  # type: ignore[assignment]
    resync_s: Annotated[float, Field(gt=0)] = _default("resync_s")  # type: ignore[assignment]
    watch_timeout_s: Annotated[float, Field(gt=0, le=3600)] = _default("watch_timeout_s")  # type: ignore[assignment]
    retry_s: Annotated[float, Field(gt=0, le=300)] = _default("retry_s")  # type: ignore[assignment]


def pool_discovery(model: str, section: InferencePoolSection, engines: Mapping[str, EngineConfig],
                   group_engines: Mapping[tuple[str, str], EngineConfig] | None = None) -> InferencePoolDiscovery:
    groups = tuple(sorted((variant, group, engine) for (variant, group), engine in (group_engines or {}).items()))
    return InferencePoolDiscovery(model, section.name, section.namespace, section.variant_label, section.resync_s,
                                  section.watch_timeout_s, section.retry_s, tuple(sorted(engines.items())), groups)
