"""`duet check`: a config that loads is still refused when a high-speed variant's allowed task
types have neither a parity report nor an operator's override behind them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import main as duet
from gateway.detect import native

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
REPORT = "parity report 2026-12-03T19:37:58+00:00 sha256:" + "ab" * 32


def check(tmp_path: Path, edit: Callable[[dict[str, Any]], None], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    raw = yaml.safe_load(DEMO.read_text())
    edit(raw["models"]["smollm2"]["variants"]["fast"])
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    status = duet(["check", str(path)])
    out = capsys.readouterr()
    return status, out.out + out.err


def hand_written(fast: dict[str, Any]) -> None:
    fast["allowed_tasks"] = ["chat", "coding", "agent", "extraction"]
    fast.pop("allowed_tasks_source")


def left_out(fast: dict[str, Any]) -> None:
    fast.pop("allowed_tasks")
    fast.pop("allowed_tasks_source")


def test_the_demo_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert duet(["check", str(DEMO)]) == 0


@pytest.mark.parametrize(("edit", "claim"), [(hand_written, "written by hand"), (left_out, "every task type is allowed")])
def test_allowed_tasks_without_a_report_are_refused(tmp_path: Path, edit: Callable[[dict[str, Any]], None], claim: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    status, text = check(tmp_path, edit, capsys)
    assert status == 1
    assert "models.smollm2.variants.fast.allowed_tasks" in text and claim in text and "allowed_tasks_override" in text


def test_a_source_that_names_no_report_is_no_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = check(tmp_path, lambda fast: fast.update(allowed_tasks_source="we tried it and it looked fine"), capsys)
    assert status == 1


@pytest.mark.parametrize("edit", [
    lambda fast: fast.update(allowed_tasks=["chat"], allowed_tasks_source=REPORT),
    lambda fast: (hand_written(fast), fast.update(allowed_tasks_override={"by": "ops", "reason": "measured in staging"})),
    lambda fast: (left_out(fast), fast.update(rollout={"stage": "shadow"})),
])
def test_a_report_an_override_or_the_shadow_stage_is_accepted(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert check(tmp_path, edit, capsys)[0] == 0


def test_the_override_is_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, text = check(tmp_path, lambda fast: fast.update(allowed_tasks_override={"by": "ops", "why": "x"}), capsys)
    assert status == 1
    assert "models.smollm2.variants.fast.allowed_tasks_override.why: unknown key" in text
    assert "allowed_tasks_override.reason" in text


def test_the_summary_says_which_detector_serves_and_whether_compiled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert duet(["check", str(DEMO)]) == 0
    served = "Python and numpy" if native.load() is None else "compiled"  # core: auto, as built on this machine
    assert f"task detector blend, {served})" in capsys.readouterr().out
    raw = yaml.safe_load(DEMO.read_text())
    raw["routing"]["task_detector"] = {"core": "numpy"}
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert duet(["check", str(path)]) == 0
    assert "task detector blend, Python and numpy)" in capsys.readouterr().out
    raw["routing"]["task_detector"] = {"enabled": False}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert duet(["check", str(path)]) == 0
    assert "task detector off" in capsys.readouterr().out
