"""The ``online_parity`` section: its values, and errors that name their path."""

from pathlib import Path

import pytest
import yaml

from gateway.config import parse_config
from gateway.config.online_parity import OFF
from gateway.errors import ConfigError

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


def demo_with(section: object) -> str:
    raw = yaml.safe_load(DEMO.read_text())
    raw["online_parity"] = section
    return yaml.safe_dump(raw, sort_keys=False)


def test_off_unless_configured():
    assert parse_config(DEMO.read_text()).online_parity == OFF


def test_shares_per_variant_and_task_with_a_default():
    settings = parse_config(demo_with({"shadow_checks": {"smollm2:fast": {"chat": 0.2, "*": 0.01}},
                                       "tolerances": {"chat": 0.15}}), source="/etc/duet/duet.yaml").online_parity
    assert settings.enabled
    assert settings.share("smollm2:fast", "chat") == 0.2 and settings.share("smollm2:fast", "coding") == 0.01
    assert settings.share("smollm2:standard", "chat") == 0.0
    assert settings.tolerance_for("chat") == 0.15 and settings.tolerance_for("coding") == 0.05
    assert settings.status_file == "/etc/duet/duet-parity-status.json"
    assert not settings.keep_text


ERRORS = [
    ({"shadow_checks": {"smollm2:turbo": {"chat": 0.1}}}, "online_parity.shadow_checks.smollm2:turbo", "unknown variant"),
    ({"shadow_checks": {"smollm2:standard": {"chat": 0.1}}}, "online_parity.shadow_checks.smollm2:standard",
     "a full variant is the standard"),
    ({"shadow_checks": {"smollm2:fast": {"poetry": 0.1}}}, "online_parity.shadow_checks.smollm2:fast.poetry",
     "unknown task type"),
    ({"shadow_checks": {"smollm2:fast": {"chat": 1.5}}}, "online_parity.shadow_checks.smollm2:fast.chat", ""),
    ({"shadow_checks": {"smollm2:fast": {"chat": 0.1}}, "tolerances": {"poetry": 0.1}}, "online_parity.tolerances.poetry",
     "unknown task type"),
    ({"shadow_checks": {"smollm2:fast": {"chat": 0.1}}, "confidence": 1.0}, "online_parity.confidence", ""),
    ({"shadow_checks": {"smollm2:fast": {"chat": 0.1}}, "samples": 3}, "online_parity.samples", "unknown key"),
    ({"shadow_checks": {}}, "online_parity.shadow_checks", ""),
]


@pytest.mark.parametrize(("section", "path", "words"), ERRORS)
def test_errors_name_the_path(section, path, words):
    with pytest.raises(ConfigError) as info:
        parse_config(demo_with(section))
    assert info.value.path == path
    assert words in str(info.value)
