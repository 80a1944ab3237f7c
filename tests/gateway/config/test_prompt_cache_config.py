"""routing.prefix_cache and routing.sessions: defaults, values, and errors that name their path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.config import parse_config
from gateway.config.policy import PrefixCacheSettings, SessionSettings
from gateway.errors import ConfigError

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())


def parse(**routing: object):
    raw = yaml.safe_load(yaml.safe_dump(DEMO))
    raw["routing"].update(routing)
    return parse_config(yaml.safe_dump(raw))


def test_defaults_and_values():
    assert parse().policy.prefix_cache == PrefixCacheSettings()
    assert parse().policy.sessions == SessionSettings()
    policy = parse(prefix_cache={"block_tokens": 512, "blocks_per_replica": 1000},
                   sessions={"enabled": False, "remembered": 10}).policy
    assert policy.prefix_cache == PrefixCacheSettings(512, 1000)
    assert policy.sessions == SessionSettings(False, 10)


@pytest.mark.parametrize(("routing", "path"), [
    ({"prefix_cache": {"block_tokens": 0}}, "routing.prefix_cache.block_tokens"),
    ({"prefix_cache": {"blok_tokens": 512}}, "routing.prefix_cache.blok_tokens"),
    ({"sessions": {"remembered": -1}}, "routing.sessions.remembered"),
    ({"sessions": {"sticky": True}}, "routing.sessions.sticky"),
])
def test_errors_name_the_path(routing, path):
    with pytest.raises(ConfigError) as info:
        parse(**routing)
    assert str(info.value).startswith(path)
