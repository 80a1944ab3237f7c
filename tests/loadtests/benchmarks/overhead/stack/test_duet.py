"""Duet under test: the run's configs keep the reference policy and load in Duet's own loader; the production path."""

from __future__ import annotations

from pathlib import Path

import yaml

from loadtests.benchmarks.overhead.stack.duet import REFERENCE_CONFIG, duet_config


def test_duet_config_keeps_the_reference_policy_with_one_full_variant_on_the_backend() -> None:
    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    config = duet_config(reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)
    variants = config["models"]["smollm2"]["variants"]
    assert len(variants) == 1
    (variant,) = variants.values()
    assert variant["kind"] == "full" and variant["replicas"] == [{"url": "http://127.0.0.1:18999"}]
    assert config["routing"] == reference["routing"]
    assert config["server"]["port"] == 18000


def test_duet_config_for_the_run_is_accepted_by_duets_own_loader() -> None:
    from gateway.config.load import parse_config

    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    config = duet_config(reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)
    parse_config(yaml.safe_dump(config), source="bench-overhead")


def test_the_detector_off_config_differs_from_the_runs_only_in_detection() -> None:
    from gateway.config.load import parse_config
    from loadtests.benchmarks.overhead.stack.duet import CONFIGS

    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    on, off = (parse_config(yaml.safe_dump(CONFIGS[name](reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)))
               for name in ("bench", "bench-detector-off"))
    assert on.policy.detection is not None and off.policy.detection is None
    assert on.models == off.models and on.policy.rules == off.policy.rules


def test_the_production_path_has_keys_every_limit_and_two_variants_of_two_replicas(tmp_path: Path) -> None:
    import asyncio
    import hashlib

    from gateway.access.keystore import FileKeyStore
    from gateway.config.load import parse_config
    from loadtests.benchmarks.overhead.stack.canned import API_KEY
    from loadtests.benchmarks.overhead.stack.duet import production_config, write_keys_file

    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    raw = production_config(reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)
    (tmp_path / "duet.yaml").write_text(yaml.safe_dump(raw))
    write_keys_file(tmp_path / "keys.json")
    config = parse_config(yaml.safe_dump(raw), source=str(tmp_path / "duet.yaml"))
    (tier,) = config.access.tiers.values()
    assert config.access.require_keys and None not in (tier.requests_per_min, tier.tokens_per_min, tier.monthly_spend_limit_usd)
    model = config.models["smollm2"]
    assert len(model.variants) == 2 and len(model.replicas) == 4
    assert config.policy == parse_config(REFERENCE_CONFIG.read_text()).policy
    keys = asyncio.run(FileKeyStore(config.access.keys_file).load())
    assert [k.tier for k in keys] == [tier.name]
    assert keys[0].hash == hashlib.sha256(API_KEY.encode()).hexdigest()
