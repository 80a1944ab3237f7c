"""duet.yaml's ``inference_pool``: the model's replicas come from a GIE InferencePool; errors name
their path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gateway.config import parse_config
from gateway.config.pool import InferencePoolDiscovery
from gateway.domain import EngineConfig, EngineRole
from gateway.errors import ConfigError
from tests.gateway.discovery.test_pool_gateway import demo_from_pool
from tests.gateway.discovery.test_resolve import DEMO


def edited(change: Callable[[dict[str, Any]], None]) -> str:
    raw = yaml.safe_load(demo_from_pool())
    change(raw)
    return yaml.safe_dump(raw, sort_keys=False)


def test_a_pool_model_lists_no_replicas_and_carries_each_variants_engine() -> None:
    config = parse_config(demo_from_pool())
    assert config.replicas == ()
    assert config.pools == (InferencePoolDiscovery("smollm2", "smollm2", "duet", "duet.dev/variant",
                                                   engines=(("fast", EngineConfig()), ("standard", EngineConfig()))),)
    assert parse_config(DEMO.read_text()).pools == ()


def pool_of(raw: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = raw["models"]["smollm2"]["inference_pool"]
    return section


@pytest.mark.parametrize("change, path", [
    (lambda raw: pool_of(raw).update(selector="app=x"), "models.smollm2.inference_pool.selector"),
    (lambda raw: pool_of(raw).update(name="Not_A_Name"), "models.smollm2.inference_pool.name"),
    (lambda raw: pool_of(raw).pop("name"), "models.smollm2.inference_pool.name"),
    (lambda raw: pool_of(raw).update(variant_label="bad label"), "models.smollm2.inference_pool.variant_label"),
    (lambda raw: pool_of(raw).update(resync_s=0), "models.smollm2.inference_pool.resync_s"),
    (lambda raw: raw["models"]["smollm2"]["variants"]["fast"].update(replicas=[{"url": "http://127.0.0.1:1"}]),
     "models.smollm2.variants.fast.replicas"),
    (lambda raw: raw["models"]["smollm2"]["variants"]["standard"].update(
        discovery={"kubernetes": {"label_selector": "a=b"}}), "models.smollm2.variants.standard.discovery"),
])
def test_errors_name_their_path(change: Callable[[dict[str, Any]], None], path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(edited(change))
    assert caught.value.path == path


def test_a_p_d_variant_in_a_pool_needs_the_engine_role_filter() -> None:
    def decode(raw: dict[str, Any]) -> None:
        raw["models"]["smollm2"]["variants"]["standard"]["engine"] = {"role": "decode", "kv_connector": "NixlConnector"}

    with pytest.raises(ConfigError) as caught:
        parse_config(edited(decode))
    assert caught.value.path == "models.smollm2.variants.standard.engine.role"
    assert "'engine-role' filter" in str(caught.value)


def test_the_defaults_are_the_frozen_types() -> None:
    (found,) = parse_config(demo_from_pool()).pools
    bare = InferencePoolDiscovery("smollm2", "smollm2")
    assert (found.resync_s, found.watch_timeout_s, found.retry_s) == (bare.resync_s, bare.watch_timeout_s, bare.retry_s)
    assert EngineRole.BOTH is found.engine_of("standard").role  # type: ignore[union-attr]
    assert found.engine_of("turbo") is None
