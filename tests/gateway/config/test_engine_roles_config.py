"""Engine roles in duet.yaml: a variant's engine (and a replica's own) reach each Replica; a bad
role, connector or budget is an error naming its path."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gateway.config import parse_config
from gateway.domain import EngineConfig, EngineRole
from gateway.errors import ConfigError
from tests.gateway.config.test_load import DEMO

NIXL = "NixlConnector"


def standard(raw: dict[str, Any]) -> dict[str, Any]:
    variant: dict[str, Any] = raw["models"]["smollm2"]["variants"]["standard"]
    return variant


def with_role_filter(raw: dict[str, Any]) -> None:
    """The engine-role filter in every routing profile (a P/D replica needs it)."""
    raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
    for profile in raw["routing"]["profiles"].values():
        profile["filters"].append("engine-role")


def p_d(raw: dict[str, Any]) -> None:
    """The standard variant as one prefill and one decode replica, through NIXL."""
    with_role_filter(raw)
    standard(raw)["replicas"] = [
        {"url": "http://127.0.0.1:8101", "engine": {"role": "prefill", "kv_connector": NIXL, "max_num_batched_tokens": 8192}},
        {"url": "http://127.0.0.1:8103", "engine": {"role": "decode", "kv_connector": NIXL, "max_num_batched_tokens": 512,
                                                    "max_num_seqs": 256}},
    ]


def parsed(*edits: Any) -> Any:
    raw = yaml.safe_load(DEMO.read_text())
    for edit in edits:
        edit(raw)
    return parse_config(yaml.safe_dump(raw, sort_keys=False))


def error_of(*edits: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parsed(*edits)
    return info.value


def test_replicas_default_to_both_with_the_profiles_budgets() -> None:
    assert all(r.engine == EngineConfig() for r in parsed().replicas)


def test_a_variants_engine_reaches_its_replicas_and_a_replicas_own_replaces_it() -> None:
    def budgets(raw: dict[str, Any]) -> None:
        standard(raw)["engine"] = {"max_num_batched_tokens": 1024}
        standard(raw)["replicas"].append({"url": "http://127.0.0.1:8103", "engine": {"max_num_seqs": 64}})

    replicas = {r.id: r.engine for r in parsed(budgets).replicas}
    assert replicas["smollm2/standard/0"] == EngineConfig(max_num_batched_tokens=1024)
    assert replicas["smollm2/standard/1"] == EngineConfig(max_num_seqs=64)  # a whole block, not merged
    assert replicas["smollm2/fast/0"] == EngineConfig()


def test_prefill_and_decode_replicas_carry_their_roles() -> None:
    engines = [r.engine for r in parsed(p_d).replicas if r.variant == "standard"]
    assert [e.role for e in engines] == [EngineRole.PREFILL, EngineRole.DECODE]
    assert not engines[0].decodes and engines[0].prefills and engines[1].decodes and not engines[1].prefills
    assert engines[1] == EngineConfig(EngineRole.DECODE, 512, 256, NIXL)


def set_engine(engine: dict[str, Any], replica: int = 0) -> Any:
    return lambda raw: standard(raw)["replicas"][replica].update(engine=engine)


ERRORS = [
    ("unknown role", set_engine({"role": "encode"}), "models.smollm2.variants.standard.replicas.0.engine.role",
     "'both', 'prefill' or 'decode'"),
    ("unknown key", set_engine({"chunk": 512}), "models.smollm2.variants.standard.replicas.0.engine.chunk", "unknown key"),
    ("role without a connector", set_engine({"role": "prefill"}), "models.smollm2.variants.standard.replicas.0.engine",
     "name its kv_connector"),
    ("unknown connector", set_engine({"role": "decode", "kv_connector": "CarrierPigeon"}),
     "models.smollm2.variants.standard.replicas.0.engine.kv_connector", "NixlConnector"),
    ("zero budget", lambda raw: standard(raw).update(engine={"max_num_batched_tokens": 0}),
     "models.smollm2.variants.standard.engine.max_num_batched_tokens", "greater than 0"),
    ("budget under the batch", lambda raw: standard(raw).update(engine={"max_num_batched_tokens": 64, "max_num_seqs": 128}),
     "models.smollm2.variants.standard.engine", "vLLM refuses"),
    ("prefill with no decode", lambda raw: (with_role_filter(raw), set_engine({"role": "prefill", "kv_connector": NIXL})(raw)),
     "models.smollm2.variants.standard.replicas.0.engine.role", "needs a decode (or both) replica"),
    ("decode through another connector",
     lambda raw: (p_d(raw), set_engine({"role": "decode", "kv_connector": "MooncakeConnector"}, 1)(raw)),
     "models.smollm2.variants.standard.replicas.0.engine.role", "same kv_connector (NixlConnector)"),
]


@pytest.mark.parametrize(("name", "edit", "path", "words"), ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_engines_name_their_path(name: str, edit: Any, path: str, words: str) -> None:
    error = error_of(edit)
    assert error.path == path
    assert words in str(error)


def test_a_prefill_replica_may_hand_off_to_a_both_replica_with_the_same_connector() -> None:
    def mixed(raw: dict[str, Any]) -> None:
        p_d(raw)
        standard(raw)["replicas"][1]["engine"] = {"role": "both", "kv_connector": NIXL}

    assert [r.engine.role for r in parsed(mixed).replicas if r.variant == "standard"] == [EngineRole.PREFILL, EngineRole.BOTH]


def test_a_p_d_replica_needs_the_engine_role_filter_in_every_profile() -> None:
    def without_filter(raw: dict[str, Any]) -> None:
        p_d(raw)
        raw["routing"]["profiles"]["default"]["filters"].remove("engine-role")

    error = error_of(without_filter)
    assert error.path == "models.smollm2.variants.standard.replicas.0.engine.role"
    assert "needs an 'engine-role' filter in every routing profile (lacking: default)" in str(error)


def test_a_discovered_p_d_variant_needs_the_engine_role_filter_too() -> None:
    def discovered(raw: dict[str, Any]) -> None:
        variant = standard(raw)
        del variant["replicas"]
        variant["discovery"] = {"kubernetes": {"label_selector": "app=vllm"}}
        variant["engine"] = {"role": "decode", "kv_connector": NIXL}

    error = error_of(discovered)
    assert error.path == "models.smollm2.variants.standard.engine.role" and "'engine-role' filter" in str(error)
    found = parsed(discovered, with_role_filter).discovery
    assert [d.engine.role for d in found] == [EngineRole.DECODE]
