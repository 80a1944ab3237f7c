"""duet keys: a key's tasks are checked against the config's task types and kept in its record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.cli import main

DEMO_PATH = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


def _config(tmp_path: Path) -> Path:
    raw = yaml.safe_load(DEMO_PATH.read_text())
    raw["access"] = {"require_keys": True, "keys_file": "keys.json", "tiers": {"basic": {}}}
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_create_keeps_the_tasks_the_key_names_and_list_shows_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    assert main(["keys", "create", "--config", str(config), "--name", "ci", "--tier", "basic",
                 "--tasks", "coding, chat"]) == 0
    record = json.loads((tmp_path / "keys.json").read_text())["keys"][0]
    assert record["tasks"] == ["coding", "chat"]
    assert main(["keys", "create", "--config", str(config), "--name", "any", "--tier", "basic"]) == 0
    capsys.readouterr()
    assert main(["keys", "list", "--config", str(config)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[-1] for line in listed] == ["coding,chat", "any task"]


def test_create_refuses_a_task_the_config_does_not_define(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    assert main(["keys", "create", "--config", str(config), "--name", "ci", "--tier", "basic", "--tasks", "poetry"]) == 2
    assert "unknown task type(s) ['poetry']" in capsys.readouterr().err
    assert not (tmp_path / "keys.json").exists()
