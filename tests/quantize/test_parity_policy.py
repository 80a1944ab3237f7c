"""--write-policy: the verdicts land in the variant's allowed_tasks, the rest of the file stays
byte for byte (comments included), and the result passes ``duet check``."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import main as duet
from gateway.cli.parity import config_problem
from gateway.config.load import load_config
from quantize.errors import ParityError
from quantize.parity.policy import PolicyTarget, write_policy

DEMO = Path(__file__).resolve().parents[2] / "deploy" / "config" / "demo.yaml"
SHA = "ab" * 32
DEMO_SOURCE = yaml.safe_load(DEMO.read_text())["models"]["smollm2"]["variants"]["fast"]["allowed_tasks_source"]


def report(**verdicts: str) -> dict[str, Any]:
    return {"tasks": {task.replace("_", "-"): {"verdict": v} for task, v in verdicts.items()},
            "metadata": {"date": "2026-12-02T21:00:00+00:00"}, "report_sha256": SHA}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "duet.yaml"
    shutil.copy(DEMO, path)
    return path


def target(config: Path, variant: str = "fast") -> PolicyTarget:
    """The gateway's own check, as duet parity passes it."""
    return PolicyTarget(config, variant, config_problem)


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_verdicts_become_allowed_tasks_and_only_those_lines_change(config: Path) -> None:
    before = config.read_text()
    change = write_policy(target(config, "fast"), report(chat="allowed", coding="not allowed", agent="allowed",
                                                  extraction="allowed", long_context="not allowed", reasoning="allowed"))
    assert change.allowed == ("chat", "agent", "extraction", "reasoning") and not change.rewritten
    after = config.read_text()
    assert changed_lines(before, after) == [  # the demo's line and its source (the int4 report) are replaced
        "-        allowed_tasks: [agent, extraction]",
        f'-        allowed_tasks_source: "{DEMO_SOURCE}"',
        "+        allowed_tasks: [chat, agent, extraction, reasoning]",
        f'+        allowed_tasks_source: "duet parity 2026-12-02T21:00:00+00:00 report sha256:{SHA}"',
    ]
    variant = load_config(config).models["smollm2"].variants["fast"]
    assert variant.allows("reasoning") and not variant.allows("coding")
    assert duet(["check", str(config)]) == 0


def test_tasks_not_evaluated_keep_their_status(config: Path) -> None:
    change = write_policy(target(config, "smollm2/fast"), report(coding="not allowed", reasoning="allowed"))
    assert change.allowed == ("agent", "extraction", "reasoning")  # the demo allows agent and extraction
    # standard has no allowed_tasks ("all"): everything but what failed stays allowed.
    change = write_policy(target(config, "standard"), report(long_context="not allowed"))
    assert change.allowed == ("chat", "coding", "agent", "extraction", "reasoning")
    raw = yaml.safe_load(config.read_text())["models"]["smollm2"]["variants"]["standard"]
    assert raw["allowed_tasks_source"].endswith(SHA)


def test_a_second_write_replaces_the_source_line(config: Path) -> None:
    write_policy(target(config, "fast"), report(coding="allowed"))
    first = config.read_text()
    write_policy(target(config, "fast"), {**report(coding="not allowed"), "report_sha256": "cd" * 32})
    assert len(changed_lines(first, config.read_text())) == 4
    assert config.read_text().count("allowed_tasks_source") == 1


def test_task_types_the_config_does_not_define_are_skipped(config: Path) -> None:
    assert write_policy(target(config, "fast"), report(poetry="allowed")).skipped == ("poetry",)


def test_flow_style_variant_is_rewritten_and_says_so(config: Path) -> None:
    raw = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump(raw, default_flow_style=True))
    change = write_policy(target(config, "fast"), report(coding="not allowed"))
    assert change.rewritten and "coding" not in change.allowed
    assert duet(["check", str(config)]) == 0


@pytest.mark.parametrize(("variant", "message"), [("turbo", "is not in the file"), ("other/fast", "is not in the file")])
def test_unknown_variant_is_refused_and_the_file_untouched(config: Path, variant: str, message: str) -> None:
    before = config.read_text()
    with pytest.raises(ParityError, match=message):
        write_policy(target(config, variant), report(coding="allowed"))
    assert config.read_text() == before


def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="cannot read"):
        write_policy(target(tmp_path / "missing.yaml", "fast"), report(coding="allowed"))


def test_a_result_the_check_refuses_is_not_written(config: Path) -> None:
    raw = yaml.safe_load(config.read_text())
    raw["routing"]["surprise"] = 1  # invalid before the edit, so after it too
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    before = config.read_text()
    with pytest.raises(ParityError, match=r"would not be a valid config: .*routing.surprise.*unknown key"):
        write_policy(target(config), report(coding="allowed"))
    assert config.read_text() == before


def test_the_check_is_the_callers(config: Path) -> None:
    seen: list[tuple[str, str]] = []
    before = config.read_text()

    def refuse(text: str, source: str) -> str:
        seen.append((text, source))
        return "models.smollm2: no"

    with pytest.raises(ParityError, match="models.smollm2: no"):
        write_policy(PolicyTarget(config, "fast", refuse), report(coding="allowed"))
    assert seen and seen[0][1] == str(config) and "allowed_tasks_source" in seen[0][0]
    assert config.read_text() == before
