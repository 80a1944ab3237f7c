"""The command shell's side of online parity: recording a verdict in the config file with its
evidence (the way ``duet parity --write-policy`` does), and ``duet parity status``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from gateway.cli import main as duet
from gateway.cli.online_parity import record
from gateway.config import load_config
from gateway.parity.ports import Revision

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
EVIDENCE = {"variant": "smollm2:fast", "task": "chat", "state": {"pairs": 21, "conclusion": "loss"}}


def demo_copy(tmp_path: Path, fast_lines: str = "") -> Path:
    """The demo (comments and all) with fast allowing chat, plus ``fast_lines`` under fast."""
    text = DEMO.read_text()
    text = re.sub(r"(\n        allowed_tasks: )\[[^\]]*\]", r"\1[chat, agent, extraction]", text, count=1)
    if fast_lines:
        anchor = "        launch_profile: cpu-smollm2-int4\n"
        text = text.replace(anchor, anchor + fast_lines)
    if "rollout-stage" not in text:
        text = text.replace("    - {type: task-allowed, name: task-allowed}\n",
                            "    - {type: task-allowed, name: task-allowed}\n    - {type: rollout-stage, name: rollout-stage}\n")
        text = text.replace("filters: [healthy, context-fits, tools, task-allowed]",
                            "filters: [healthy, context-fits, tools, task-allowed, rollout-stage]")
    path = tmp_path / "duet.yaml"
    path.write_text(text)
    load_config(path)
    return path


def fast_of(path: Path) -> dict:
    return yaml.safe_load(path.read_text())["models"]["smollm2"]["variants"]["fast"]


def test_a_revocation_is_written_with_its_evidence(tmp_path: Path) -> None:
    path = demo_copy(tmp_path)
    comments = [line for line in path.read_text().splitlines() if line.strip().startswith("#")]
    source = record(str(path), Revision("smollm2:fast", "chat", False, EVIDENCE))
    fast = fast_of(path)
    assert fast["allowed_tasks"] == ["agent", "extraction"] and fast["allowed_tasks_source"] == source
    sha = re.fullmatch(r"duet parity online \S+ report sha256:([0-9a-f]{64})", source).group(1)
    (evidence,) = (tmp_path / "parity-online").glob("*.json")
    assert evidence.name == f"smollm2-fast-chat-{sha[:12]}.json"
    assert json.loads(evidence.read_text()) == EVIDENCE
    assert all(line in path.read_text() for line in comments)  # only the variant's policy lines changed
    assert not load_config(path).models["smollm2"].variants["fast"].allows("chat")


def test_opening_a_task_on_a_shadow_variant_makes_it_a_canary_for_that_task(tmp_path: Path) -> None:
    path = demo_copy(tmp_path, "        rollout:\n          stage: shadow\n")
    record(str(path), Revision("smollm2:fast", "reasoning", True, {**EVIDENCE, "task": "reasoning"}))
    fast = fast_of(path)
    assert fast["rollout"] == {"stage": "canary", "canary_shares": {"reasoning": 1.0}}
    assert "reasoning" in fast["allowed_tasks"]
    variant = load_config(path).models["smollm2"].variants["fast"]
    assert variant.rollout.share("reasoning") == 1.0 and variant.rollout.share("chat") == 0.0
    assert fast["replicas"] == [{"url": "http://127.0.0.1:8102"}]  # the keys after it are untouched


def test_opening_adds_the_rollout_line_when_the_variant_had_none(tmp_path: Path) -> None:
    path = demo_copy(tmp_path)
    record(str(path), Revision("smollm2:fast", "reasoning", True, {**EVIDENCE, "task": "reasoning"}))
    assert fast_of(path)["rollout"] == {"stage": "canary", "canary_shares": {"reasoning": 1.0}}


def test_status_prints_the_live_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = demo_copy(tmp_path)
    assert duet(["parity", "status", "--config", str(path)]) == 2  # no online_parity section
    raw = yaml.safe_load(path.read_text())
    raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": 0.1}}}
    path.write_text(yaml.safe_dump(raw))
    capsys.readouterr()
    assert duet(["parity", "status", "--config", str(path)]) == 0
    assert "no online verdicts yet" in capsys.readouterr().out
    row = {"variant": "smollm2:fast", "task": "chat", "pairs": 21, "mean_loss": 0.4286, "tolerance": 0.05,
           "confidence": 0.95, "evidence_loss": 1.02, "evidence_parity": -3.1, "conclusion": "loss", "epoch": 0}
    (tmp_path / "duet-parity-status.json").write_text(json.dumps({"written_at": 0, "table": [row]}))
    assert duet(["parity", "status", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1970-01-01 00:00:00 UTC" in out
    assert re.search(r"smollm2:fast\s+chat\s+21\s+0\.429\s+0\.05\s+0\.95\s+1\.02\s+-3\.10\s+loss", out), out
