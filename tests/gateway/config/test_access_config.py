"""The access section and the store choice: defaults, tiers, and errors naming their paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import parse_config
from gateway.domain import Priority
from gateway.errors import ConfigError

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


def demo(**sections: Any) -> str:
    raw = yaml.safe_load(DEMO.read_text())
    for name, value in sections.items():
        if name == "state":
            raw["state"].update(value)
        else:
            raw[name] = value
    return yaml.safe_dump(raw)


def test_without_an_access_section_keys_are_off_and_state_is_in_memory() -> None:
    config = parse_config(demo())
    assert not config.access.require_keys and not config.access.explicit
    assert (config.state.store, config.state.quota_failure) == ("memory", "open")


def test_tiers_and_the_redis_store_load() -> None:
    access = {"require_keys": True, "tiers": {"gold": {
        "requests_per_min": 600, "tokens_per_min": 100000, "monthly_spend_limit_usd": 50,
        "models": ["smollm2"], "variants": ["fast"], "priority": "batch"}}}
    config = parse_config(demo(access=access, state={"store": "redis", "redis_url": "redis://r:6379/1",
                                                     "quota_failure": "closed"}))
    gold = config.access.tiers["gold"]
    assert (gold.requests_per_min, gold.tokens_per_min, gold.monthly_spend_limit_usd) == (600, 100000, 50)
    assert gold.models == frozenset({"smollm2"}) and gold.variants == frozenset({"fast"})
    assert gold.priority is Priority.BATCH
    assert (config.state.store, config.state.redis_url, config.state.quota_failure) == ("redis", "redis://r:6379/1", "closed")


@pytest.mark.parametrize(("sections", "path"), [
    ({"access": {"require_keys": True, "tiers": {"t": {"models": ["gpt"]}}}}, "access.tiers.t.models.0"),
    ({"access": {"require_keys": True, "tiers": {"t": {"variants": ["turbo"]}}}}, "access.tiers.t.variants.0"),
    ({"access": {"require_keys": True, "tiers": {"t": {"rpm": 3}}}}, "access.tiers.t.rpm"),
    ({"access": {"require_keys": True}}, "access.tiers"),
    ({"access": {"tiers": {}}}, "access.require_keys"),
    ({"state": {"store": "etcd"}}, "state.store"),
    ({"state": {"quota_failure": "maybe"}}, "state.quota_failure"),
])
def test_errors_name_their_path(sections: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(demo(**sections))
    assert error.value.path == path


def test_the_old_monthly_budget_key_is_a_deprecated_alias_of_the_spend_limit(caplog: pytest.LogCaptureFixture) -> None:
    """``monthly_budget_usd`` (the key's name until "budget" came to mean only a latency budget)
    still sets the spend limit, with a warning that names its path; never together with the new key."""
    old = {"require_keys": True, "tiers": {"gold": {"monthly_budget_usd": 50}}}
    with caplog.at_level("WARNING", logger="gateway.config.load"):
        config = parse_config(demo(access=old))
    assert config.access.tiers["gold"].monthly_spend_limit_usd == 50
    assert "access.tiers.gold.monthly_budget_usd is deprecated" in caplog.text
    both = {"require_keys": True, "tiers": {"gold": {"monthly_budget_usd": 50, "monthly_spend_limit_usd": 60}}}
    with pytest.raises(ConfigError) as error:
        parse_config(demo(access=both))
    assert error.value.path == "access.tiers.gold.monthly_budget_usd"
