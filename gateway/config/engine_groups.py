"""A variant's replicas as engine groups, without URLs: ``engine_groups: [{count, engine}]`` in
duet.yaml, what ``duet plan --roles`` writes and ``duet deploy render`` starts as one Kubernetes
Deployment per group (and compose as one service per replica).

    variants:
      standard:
        engine_groups:
          - {count: 2, engine: {role: prefill, kv_connector: NixlConnector, max_num_batched_tokens: 16384}}
          - {count: 4, engine: {role: both, kv_connector: NixlConnector, max_num_batched_tokens: 2048}}

A group's name is derived from its engine (``group_name``), never written: the renderer labels a
group's pods with it (``GROUP_LABEL``) and the gateway's discovery selects them by it, so the two
cannot disagree. The name changes only when the engine does (and then so do the pods).
"""

from __future__ import annotations

from typing import Protocol

from gateway.errors import ConfigError

GROUP_LABEL = "duet.dev/engine-group"
# Short, DNS-1123-safe spellings of the KV connectors the schema accepts.
CONNECTORS = {"NixlConnector": "nixl", "LMCacheConnectorV1": "lmcache", "MooncakeConnector": "mooncake"}


class EngineFields(Protocol):
    """What names a group: the fields of a config ``engine`` block (EngineSection) or of the
    renderer's EngineSettings, which spell them alike."""

    @property
    def role(self) -> str: ...
    @property
    def max_num_batched_tokens(self) -> int | None: ...
    @property
    def max_num_seqs(self) -> int | None: ...
    @property
    def kv_connector(self) -> str | None: ...
    @property
    def tensor_parallel_size(self) -> int | None: ...


def group_name(engine: EngineFields) -> str:
    """A DNS-1123 label naming ``engine``, one to one: its role (left out for ``both`` without a
    connector), connector, chunk budget (``c``), largest batch (``s``) and TP size (``tp``), e.g.
    ``prefill-nixl-c16384-tp4`` or ``c2048``; ``default`` when nothing is set."""
    parts = [engine.role] if engine.role != "both" or engine.kv_connector else []
    if engine.kv_connector is not None:
        parts.append(CONNECTORS.get(engine.kv_connector, engine.kv_connector.lower()))
    parts += [f"{prefix}{value}" for prefix, value in (("c", engine.max_num_batched_tokens), ("s", engine.max_num_seqs),
                                                       ("tp", engine.tensor_parallel_size)) if value is not None]
    return "-".join(parts) or "default"


class GroupedVariant(Protocol):
    """What ``check_groups`` reads of a variant's section (``schema.VariantSection``)."""

    @property
    def model_fields_set(self) -> set[str]: ...
    @property
    def replica_count(self) -> int | None: ...


def check_groups(variant: GroupedVariant, counts: list[int], engines: list[EngineFields], path: str) -> None:
    """A variant's ``engine_groups`` (``counts[i]`` replicas of ``engines[i]``) say every replica's
    engine on their own: no listed replicas beside them, no variant ``engine`` they would silently
    override, a ``replica_count`` (if any) equal to their sum, and no engine twice (each group is a
    Deployment named after its engine). Raises ConfigError naming the path."""
    if not counts:
        return
    for key in ("replicas", "engine"):
        if key in variant.model_fields_set:
            raise ConfigError(f"{path}.{key}", f"engine_groups give every replica's engine (and, deployed, its pods): "
                                               f"remove {key}, or the groups")
    total = sum(counts)
    if variant.replica_count is not None and variant.replica_count != total:
        raise ConfigError(f"{path}.replica_count", f"{variant.replica_count}, but engine_groups count {total} replicas")
    seen: dict[str, int] = {}
    for i, engine in enumerate(engines):
        name = group_name(engine)
        if name in seen:
            raise ConfigError(f"{path}.engine_groups.{i}.engine",
                              f"the same engine as engine_groups.{seen[name]} (group '{name}'): add their counts")
        seen[name] = i
