"""``engine_groups`` in duet.yaml: counts of replicas per engine without URLs, named after their
engine; they stand alone (no listed replicas, no variant engine beside them), sum to
``replica_count``, never repeat an engine, and their roles need partners and the engine-role
filter, as listed replicas' do. Discovery finds each group by its label."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.engine_groups import GROUP_LABEL, group_name
from gateway.config.schema import EngineSection
from gateway.domain import EngineConfig, EngineRole
from gateway.errors import ConfigError
from serving.launch.roles import EngineSettings
from tests.gateway.config.test_engine_roles_config import NIXL, parsed, standard, with_role_filter

PATH = "models.smollm2.variants.standard"


@pytest.mark.parametrize("engine, name", [
    ({}, "default"),
    ({"max_num_batched_tokens": 2048}, "c2048"),
    ({"role": "prefill", "kv_connector": NIXL, "max_num_batched_tokens": 16384}, "prefill-nixl-c16384"),
    ({"role": "decode", "kv_connector": "LMCacheConnectorV1"}, "decode-lmcache"),
    ({"kv_connector": NIXL, "max_num_seqs": 256, "tensor_parallel_size": 2}, "both-nixl-s256-tp2"),
])
def test_a_group_is_named_after_its_engine(engine: dict[str, Any], name: str) -> None:
    assert group_name(EngineSection(**engine)) == name


def test_the_config_and_the_renderer_name_an_engine_alike() -> None:
    section = EngineSection(role="prefill", kv_connector=NIXL, max_num_batched_tokens=8192, tensor_parallel_size=4)
    assert group_name(EngineSettings("prefill", 8192, None, NIXL, 4)) == group_name(section) == "prefill-nixl-c8192-tp4"


def groups(*entries: tuple[int, dict[str, Any]]) -> Any:
    def edit(raw: dict[str, Any]) -> None:
        variant = standard(raw)
        variant.pop("replicas", None)
        variant["engine_groups"] = [{"count": count, "engine": engine} for count, engine in entries]
    return edit


PREFILL = {"role": "prefill", "kv_connector": NIXL}
BOTH = {"kv_connector": NIXL, "max_num_batched_tokens": 2048}


def test_engine_groups_load_and_a_discovered_variant_selects_each_group_by_its_label() -> None:
    def discovered(raw: dict[str, Any]) -> None:
        standard(raw)["discovery"] = {"kubernetes": {"label_selector": "duet.dev/variant=standard"}}

    config = parsed(with_role_filter, groups((2, PREFILL), (3, BOTH)), discovered)
    (target,) = [d for d in config.discovery if d.variant == "standard"]
    assert target.selections == (
        (f"duet.dev/variant=standard,{GROUP_LABEL}=prefill-nixl", EngineConfig(EngineRole.PREFILL, kv_connector=NIXL)),
        (f"duet.dev/variant=standard,{GROUP_LABEL}=both-nixl-c2048", EngineConfig(EngineRole.BOTH, 2048, None, NIXL)))


@pytest.mark.parametrize("edits, path, message", [
    ((groups((1, {})),), f"{PATH}.replicas", "remove replicas, or the groups"),
    ((groups((1, {})), lambda raw: standard(raw).update(engine={"max_num_seqs": 8})), f"{PATH}.engine",
     "remove engine, or the groups"),
    ((groups((2, {}), (1, BOTH)), lambda raw: standard(raw).update(replica_count=4)), f"{PATH}.replica_count",
     "4, but engine_groups count 3 replicas"),
    ((groups((1, BOTH), (2, BOTH)),), f"{PATH}.engine_groups.1.engine", "the same engine as engine_groups.0"),
    ((with_role_filter, groups((2, PREFILL))), f"{PATH}.engine_groups.0.engine.role", "needs a decode (or both)"),
    ((groups((1, PREFILL), (1, BOTH)),), f"{PATH}.engine_groups", "needs an 'engine-role' filter"),
    ((groups((0, {})),), f"{PATH}.engine_groups.0.count", "greater than 0"),
])
def test_engine_groups_errors_name_their_path(edits: tuple[Any, ...], path: str, message: str) -> None:
    def discovered(raw: dict[str, Any]) -> None:  # so the role filter's check sees the groups
        if "replicas" not in standard(raw):
            standard(raw)["discovery"] = {"kubernetes": {"label_selector": "a=b"}}

    def keep_listed(raw: dict[str, Any]) -> None:  # the first case: listed replicas beside groups
        if path.endswith(".replicas"):
            standard(raw)["replicas"] = [{"url": "http://127.0.0.1:8101"}]

    with pytest.raises(ConfigError) as info:
        parsed(*edits, keep_listed, discovered)
    assert info.value.path == path and message in str(info.value)
