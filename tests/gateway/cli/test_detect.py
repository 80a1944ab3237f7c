"""duet detect eval and train on a small labelled file."""

from __future__ import annotations

import json

import pytest

from gateway.cli import main
from gateway.detect import TaskDetector
from gateway.detect.blend_model import BlendDetector
from gateway.errors import ConfigError

ROWS = [
    {"task": "reasoning", "messages": [{"role": "user", "content": "If 3 pens cost $6, how much do 7 pens cost?"}]},
    {"task": "coding", "prompt": "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n"},
    {"task": "chat", "messages": [{"role": "user", "content": "Write a short poem about autumn leaves."}]},
    {"task": "reasoning", "messages": [{"role": "user", "content": "Tell me a joke about cats."}]},  # mislabelled on purpose
]


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    return path


def test_eval_reports_recall_confusions_and_leak(data, capsys):
    assert main(["detect", "eval", "--kind", "words", "--data", str(data), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tasks"]["reasoning"]["n"] == 2 and result["tasks"]["coding"]["recall"] == 1.0
    assert result["confusions"]["reasoning"] == {"chat": 1}  # the joke, labelled reasoning, is called chat
    assert result["confident_leak"] == 0.5  # ... and would go to a fast variant that refuses reasoning


def test_eval_of_the_default_blend_detector_reports_its_abstentions(data, capsys):
    """The blend detector (the default) reads the same file. It abstains on the short word
    problem and the poem (too unlike anything it learned), sending both where every task is
    allowed, and the eval counts those apart from its confident mistakes (the joke)."""
    assert main(["detect", "eval", "--data", str(data), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tasks"]["reasoning"]["n"] == 2
    assert result["confusions"]["reasoning"] == {"abstained": 1, "chat": 1}
    assert result["tasks"]["chat"]["abstained"] == 1.0 and result["tasks"]["coding"]["recall"] == 1.0
    assert result["confident_leak"] == 0.5  # the joke, labelled reasoning, is confidently chat


def test_eval_names_the_line_of_a_bad_row(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"task": "poetry", "messages": []}) + "\n")
    with pytest.raises(ConfigError, match="bad.jsonl:1"):
        main(["detect", "eval", "--data", str(path)])


@pytest.mark.slow
def test_train_writes_a_model_file_the_detector_loads(data, tmp_path):
    from gateway.detect.training import PROMPTS
    if not (PROMPTS / "gsm8k_train.jsonl").exists():
        pytest.skip(f"the public prompts are not at {PROMPTS}")
    out = tmp_path / "mine_detector.json"
    assert main(["detect", "train", "--kind", "words", "--data", str(data), "--out", str(out)]) == 0
    detector = TaskDetector.from_document(json.loads(out.read_text()))
    assert detector.meta["command"] == "duet detect train --data mine.jsonl"
    assert detector.detect_messages(ROWS[0]["messages"]).task == "reasoning"


@pytest.mark.slow
def test_train_blend_takes_the_file_as_one_more_source(data, tmp_path, capsys):
    from gateway.detect.training import PROMPTS
    if not (PROMPTS / "gsm8k_train.jsonl").exists():
        pytest.skip(f"the public prompts are not at {PROMPTS}")
    out = tmp_path / "mine_detector.json"
    assert main(["detect", "train", "--data", str(data), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["meta"]["command"] == "duet detect train --kind blend --data mine.jsonl"
    assert "data" in written["meta"]["trained_on"]  # the file's requests, as the source "data"
    detector = BlendDetector.from_file(written)
    assert detector.detect_messages(ROWS[0]["messages"]).task == "reasoning"
    capsys.readouterr()
    assert main(["detect", "eval", "--model", str(out), "--data", str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks"]["reasoning"]["n"] == 2
