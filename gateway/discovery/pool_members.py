"""An InferencePool and its pods as replicas (pure: JSON in, frozen values out).

The pool (``inference.networking.k8s.io/v1``, GIE v1.0) names its members by
``spec.selector.matchLabels`` (pods of its own namespace only) and the ports they serve on by
``spec.targetPorts`` (1 to 8 ``{number}``; every port of a pod is an endpoint of its own,
``podIP:number``, as GIE's EPP counts them). A pod is a member while it is Ready (its ``Ready``
condition ``"True"``), has a ``status.podIP`` and is not being deleted; its variant is the value
of the configured label, and, for a variant with engine groups, its engine that of the group its
``duet.dev/engine-group`` label names (one Deployment per group; a pod of no known group is left
out). Each replica is named after its pod (and port, when the pool has
several), so a pod keeps its state (EWMA, breaker) across changes and a replaced pod starts fresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.config.engine_groups import GROUP_LABEL
from gateway.config.pool import InferencePoolDiscovery
from gateway.discovery.api import DiscoveryFailed
from gateway.domain import EngineConfig, Replica

GROUP_VERSION = "inference.networking.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """What discovery reads of an InferencePool: its selector and its target ports."""

    match_labels: tuple[tuple[str, str], ...]
    ports: tuple[int, ...]

    @property
    def label_selector(self) -> str:
        """The selector as the ``labelSelector`` query parameter of a pod list (``k=v,k2=v2``)."""
        return ",".join(f"{key}={value}" for key, value in self.match_labels)


@dataclass(frozen=True, slots=True)
class Members:
    """The replicas of a pool's pods, and the Ready pods left out for their variant (or group) label."""

    replicas: tuple[Replica, ...]
    # pod names: no variant label, one the model does not have, or no group of its variant
    unlabelled: tuple[str, ...] = ()


def pool_spec(body: Mapping[str, Any]) -> PoolSpec:
    """The spec of an ``InferencePool`` object; DiscoveryFailed names what is missing."""
    name = (body.get("metadata") or {}).get("name", "?")
    if body.get("kind") not in (None, "InferencePool") or body.get("apiVersion") not in (None, GROUP_VERSION):
        raise DiscoveryFailed(f"expected an InferencePool ({GROUP_VERSION}), got {body.get('apiVersion')} {body.get('kind')}")
    spec = body.get("spec") or {}
    labels = (spec.get("selector") or {}).get("matchLabels")
    if not isinstance(labels, dict) or not labels:
        raise DiscoveryFailed(f"InferencePool {name}: spec.selector.matchLabels is missing or empty")
    numbers = [p.get("number") if isinstance(p, dict) else p for p in spec.get("targetPorts") or ()]
    ports = tuple(n for n in numbers if isinstance(n, int) and 0 < n <= 65535)
    if not ports or len(ports) != len(numbers) or len(ports) > 8:
        raise DiscoveryFailed(f"InferencePool {name}: spec.targetPorts needs 1 to 8 port numbers, got {numbers!r}")
    return PoolSpec(tuple(sorted((str(k), str(v)) for k, v in labels.items())), ports)


def is_member(pod: Mapping[str, Any]) -> bool:
    """Ready, addressed and not being deleted."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp") or not status.get("podIP"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def members(pods: Iterable[Mapping[str, Any]], spec: PoolSpec, target: InferencePoolDiscovery) -> Members:
    """The replicas of the member pods, sorted by id; each pod's variant from ``target.variant_label``."""
    found: dict[str, Replica] = {}
    unlabelled: list[str] = []
    for pod in pods:
        if not is_member(pod):
            continue
        metadata = pod.get("metadata") or {}
        name = str(metadata.get("name") or pod["status"]["podIP"])
        labels = metadata.get("labels") or {}
        variant = str(labels.get(target.variant_label))
        engine = target.engine_of(variant, labels.get(GROUP_LABEL))
        if engine is None:
            unlabelled.append(name)
            continue
        for replica in _replicas(name, str(pod["status"]["podIP"]), variant, spec.ports, target.model, engine):
            found[replica.id] = replica
    return Members(tuple(found[rid] for rid in sorted(found)), tuple(sorted(unlabelled)))


def _replicas(pod: str, ip: str, variant: str, ports: tuple[int, ...], model: str, engine: EngineConfig) -> list[Replica]:
    host = f"[{ip}]" if ":" in ip else ip
    return [Replica(id=f"{model}/{variant}/{pod}" + (f":{port}" if len(ports) > 1 else ""), model=model, variant=variant,
                    url=f"http://{host}:{port}", engine=engine) for port in ports]
