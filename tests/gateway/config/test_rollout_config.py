"""The variant's ``rollout`` section: its values, and errors that name their path."""

from pathlib import Path

import pytest
import yaml

from gateway.config import parse_config
from gateway.domain import Rollout, RolloutStage
from gateway.errors import ConfigError

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


def demo_with(rollout: object, filters: bool = True) -> str:
    """The demo with fast's ``rollout``, and a rollout-stage filter in every profile (or in none)."""
    raw = yaml.safe_load(DEMO.read_text())
    raw["models"]["smollm2"]["variants"]["fast"]["rollout"] = rollout
    routing = raw["routing"]
    staged = {p["name"] for p in routing["plugins"] if p["type"] == "rollout-stage"}
    routing["plugins"] = [p for p in routing["plugins"] if p["name"] not in staged]
    for profile in routing["profiles"].values():
        profile["filters"] = [f for f in profile["filters"] if f not in staged]
    if filters:
        routing["plugins"].append({"type": "rollout-stage", "name": "rollout"})
        for profile in routing["profiles"].values():
            profile["filters"].append("rollout")
    return yaml.safe_dump(raw, sort_keys=False)


def test_default_is_full_and_the_demo_has_no_draw_to_read():
    config = parse_config(demo_with({}))
    assert all(v.rollout == Rollout() for v in config.models["smollm2"].variants.values())
    assert not config.models["smollm2"].has_canary


def test_stages_load():
    shadow = parse_config(demo_with({"stage": "shadow"})).models["smollm2"]
    assert shadow.variants["fast"].rollout == Rollout(RolloutStage.SHADOW)
    canary = parse_config(demo_with({"stage": "canary", "canary_shares": {"coding": 0.1, "chat": 0.5}})).models["smollm2"]
    assert canary.variants["fast"].rollout == Rollout(RolloutStage.CANARY, (("chat", 0.5), ("coding", 0.1)))
    assert canary.has_canary


FAST = "models.smollm2.variants.fast"
ERRORS = [
    ({"stage": "dark"}, True, FAST + ".rollout.stage", ""),
    ({"stage": "canary"}, True, FAST + ".rollout.canary_shares", "at least one task type"),
    ({"stage": "full", "canary_shares": {"chat": 0.1}}, True, FAST + ".rollout.canary_shares", "only a canary"),
    ({"stage": "canary", "canary_shares": {"poetry": 0.1}}, True, FAST + ".rollout.canary_shares.poetry", "unknown task type"),
    ({"stage": "canary", "canary_shares": {"chat": 1.5}}, True, FAST + ".rollout.canary_shares.chat", ""),
    ({"stage": "canary", "share": 0.1}, True, FAST + ".rollout.share", "unknown key"),
    ({"stage": "shadow"}, False, FAST + ".rollout.stage", "needs a 'rollout-stage' filter in every routing profile"),
]


@pytest.mark.parametrize(("rollout", "filters", "path", "words"), ERRORS)
def test_rollout_errors_name_the_path(rollout, filters, path, words):
    with pytest.raises(ConfigError) as info:
        parse_config(demo_with(rollout, filters))
    assert info.value.path == path
    assert words in str(info.value)
