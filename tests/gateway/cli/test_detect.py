"""duet detect eval and train on a small labelled file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.detect import TaskDetector, blend_model
from gateway.detect.blend_model import MODEL_FILE, BlendDetector

BLEND_FILE = Path(blend_model.__file__).with_name(MODEL_FILE)
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


def test_eval_of_the_default_blend_detector_keeps_reasoning_plausible(data, capsys):
    """The blend detector (the default) reads the same file: the word problem is reasoning, and
    the joke, labelled reasoning, is called chat with reasoning still above its floor, so it is no
    confident leak (the words detector's is, above)."""
    assert main(["detect", "eval", "--data", str(data), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tasks"]["reasoning"]["n"] == 2 and result["tasks"]["coding"]["recall"] == 1.0
    assert result["confusions"]["reasoning"] == {"chat": 1} and result["confident_leak"] == 0.0


def test_eval_counts_a_blend_models_abstentions_apart_from_its_mistakes(data, tmp_path, capsys):
    """A blend model file whose familiarity cut no request reaches abstains on every row: the eval
    says so per task, and counts no abstention as a confident leak."""
    document = json.loads(BLEND_FILE.read_text())
    document["meta"]["familiarity"] = 1.01
    (tmp_path / "shy.json").write_text(json.dumps(document))
    assert main(["detect", "eval", "--data", str(data), "--model", str(tmp_path / "shy.json"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["confusions"]["reasoning"] == {"abstained": 2} and result["tasks"]["chat"]["abstained"] == 1.0
    assert result["confident_leak"] == 0.0


@pytest.mark.parametrize(("line", "said"), [
    (json.dumps({"task": "poetry", "messages": []}), "needs \"task\""),
    ("not json", "is not JSON"),
    ("[1, 2]", "is not a JSON object"),
    # Half of a UTF-16 pair, as JSON can spell it and no UTF-8 text holds (the detector could not read it).
    ('{"task": "chat", "messages": [{"role": "user", "content": "hi \\ud800"}]}', "half of a UTF-16 pair"),
])
@pytest.mark.parametrize("command", ["eval", "train"])
def test_a_bad_row_is_named_by_its_line_not_a_traceback(tmp_path, capsys, line, said, command):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"task": "chat", "prompt": "hello"}) + "\n" + line + "\n")
    out = ["--out", str(tmp_path / "model.json")] if command == "train" else []
    assert main(["detect", command, "--data", str(path), *out]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err and said in err
    assert not (tmp_path / "model.json").exists()


def test_a_missing_file_is_said_so(tmp_path, capsys):
    assert main(["detect", "eval", "--data", str(tmp_path / "nowhere.jsonl")]) == 1
    assert "nowhere.jsonl" in capsys.readouterr().err


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
