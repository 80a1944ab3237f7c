"""Disaggregated prefill in duet.yaml: the split rule (routing.disaggregation) and which variant
may decode KV another prefilled (``shares_weights_with``: a speculative variant on the full
weights only), each error naming its path."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.policy import DisaggregationSettings
from tests.gateway.config.test_engine_roles_config import error_of, parsed, with_role_filter


def fast(raw: dict[str, Any]) -> dict[str, Any]:
    variant: dict[str, Any] = raw["models"]["smollm2"]["variants"]["fast"]
    return variant


def speculative(raw: dict[str, Any]) -> None:
    fast(raw)["kind"] = "speculative"


def sharing(source: str) -> Any:
    def edit(raw: dict[str, Any]) -> None:
        fast(raw)["shares_weights_with"] = source
    return edit


def test_the_rule_defaults_to_duets_and_llm_d_threshold_is_16() -> None:
    assert parsed().policy.disaggregation == DisaggregationSettings("duet", 16, 0)


def test_the_threshold_rule_is_configured_by_its_tokens() -> None:
    def threshold(raw: dict[str, Any]) -> None:
        raw["routing"]["disaggregation"] = {"rule": "threshold", "non_cached_tokens": 512, "prompt_tokens": 64}
    assert parsed(threshold).policy.disaggregation == DisaggregationSettings("threshold", 512, 64)


@pytest.mark.parametrize(("section", "path"), [
    ({"rule": "always"}, "routing.disaggregation.rule"),
    ({"threshold": 16}, "routing.disaggregation.threshold"),
    ({"non_cached_tokens": -1}, "routing.disaggregation.non_cached_tokens"),
])
def test_a_bad_disaggregation_section_names_its_path(section: dict[str, Any], path: str) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["routing"]["disaggregation"] = section
    assert error_of(edit).path == path


def test_a_speculative_variant_may_declare_it_verifies_with_the_standard_weights() -> None:
    config = parsed(speculative, sharing("standard"))
    assert config.models["smollm2"].variants["fast"].shares_weights_with == "standard"
    assert config.models["smollm2"].variants["standard"].shares_weights_with is None


PATH = "models.smollm2.variants.fast.shares_weights_with"


@pytest.mark.parametrize(("edits", "says"), [
    ((sharing("standard"),), "a quantized variant has weights of its own"),  # the demo's fast is quantized
    ((speculative, sharing("nope")), "unknown variant 'nope'"),
    ((speculative, sharing("fast")), "unknown variant 'fast'"),
])
def test_only_a_speculative_variant_on_full_weights_shares_them(edits: tuple[Any, ...], says: str) -> None:
    error = error_of(*edits)
    assert error.path == PATH and says in error.message


def test_a_speculative_variant_cannot_share_a_quantized_variants_weights() -> None:
    def standard_quantized(raw: dict[str, Any]) -> None:
        raw["models"]["smollm2"]["variants"]["standard"]["kind"] = "quantized"
    error = error_of(standard_quantized, speculative, sharing("standard"))
    assert error.path == PATH and "full-precision" in error.message


def fast_decodes_standard_prefills(raw: dict[str, Any]) -> None:
    """Standard prefills only; fast (speculative) decodes only, both through NIXL."""
    with_role_filter(raw)
    nixl = "NixlConnector"
    raw["models"]["smollm2"]["variants"]["standard"]["replicas"] = [
        {"url": "http://127.0.0.1:8101", "engine": {"role": "prefill", "kv_connector": nixl}}]
    fast(raw)["replicas"] = [{"url": "http://127.0.0.1:8103", "engine": {"role": "decode", "kv_connector": nixl}}]


def test_a_speculative_decode_pool_may_pair_with_the_standard_prefill_pool_it_shares_weights_with() -> None:
    config = parsed(speculative, sharing("standard"), fast_decodes_standard_prefills)
    assert {r.engine.role.value for r in config.replicas} == {"prefill", "decode"}
    error = error_of(speculative, fast_decodes_standard_prefills)  # not declared: no partner
    assert error.path == "models.smollm2.variants.standard.replicas.0.engine.role"
