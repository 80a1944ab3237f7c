"""duet parity from the command line: bad input gets a clear message and a non-zero exit; a
small run against a simulator writes the report in the issue's shape."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.cli import main as duet
from quantize.parity.report import report_sha256
from serving.ports import free_port
from serving.sim.server.testing import SimProcess

DEMO = Path(__file__).resolve().parents[2] / "deploy" / "config" / "demo.yaml"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess("fast-test", "--time-scale", "20", "--served-model-name", "smollm2-standard") as process:
        yield process


def parity(*args: str) -> int:
    return duet(["parity", "--no-progress", *args])


@pytest.mark.parametrize(("args", "message"), [
    (["--samples", "0"], "samples must be between"),
    (["--tasks", "coding,poetry"], "unknown task type(s) poetry"),
    (["--suite", "huge"], "unknown suite 'huge'"),
    (["--tolerance", "1.5"], "--tolerance must be"),
    (["--tolerance", "0"], "--tolerance must be"),
    (["--write-policy", "duet.yaml"], "--write-policy and --variant go together"),
    (["--variant", "fast"], "--write-policy and --variant go together"),
    (["--api-key-env", "DUET_TEST_SURELY_UNSET"], "the variable is not set"),
])
def test_bad_input_is_refused_before_any_request(args: list[str], message: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    assert parity("--standard", dead, "--candidate", dead, "--out", str(tmp_path), *args) == 2
    assert message in capsys.readouterr().err


def test_unreachable_endpoint_is_named(tmp_path: Path, sim: SimProcess, capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    assert parity("--standard", sim.url, "--candidate", dead, "--samples", "1", "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "--candidate" in err and dead in err and "cannot list models" in err
    assert not (tmp_path / "parity.json").exists()


def test_not_a_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parity("--standard", "localhost:8000", "--candidate", "x", "--out", str(tmp_path)) == 2
    assert "is not an http(s) URL" in capsys.readouterr().err


def test_model_not_served_is_named(tmp_path: Path, sim: SimProcess, capsys: pytest.CaptureFixture[str]) -> None:
    assert parity("--standard", sim.url, "--candidate", sim.url, "--model", "gpt-9", "--out", str(tmp_path)) == 2
    assert "does not serve 'gpt-9'" in capsys.readouterr().err


def test_a_small_run_writes_the_report(tmp_path: Path, sim: SimProcess) -> None:
    out = tmp_path / "report"
    assert parity("--standard", sim.url, "--candidate", f"{sim.url}/v1", "--samples", "3", "--seed", "4",
                  "--tasks", "reasoning,coding,chat", "--out", str(out)) == 0
    report = json.loads((out / "parity.json").read_text())
    assert list(report["tasks"]) == ["reasoning", "coding", "chat"]
    for entry in report["tasks"].values():
        assert {"standard_acc", "candidate_acc", "diff", "ci95", "verdict", "agreement",
                "standard_tokens_per_s", "candidate_tokens_per_s"} <= set(entry)
        assert entry["verdict"] in ("allowed", "not allowed") and entry["samples"] == 3
        assert entry["ci95"][0] <= entry["diff"] <= entry["ci95"][1]
    meta = report["metadata"]
    assert meta["samples"] == 3 and meta["seed"] == 4 and meta["standard"]["model"] == "smollm2-standard"
    assert len(meta["suite_sha256"]) == 64 and "duet parity" in meta["command"]
    assert report["report_sha256"] == report_sha256(report)
    assert "| reasoning |" in (out / "parity.md").read_text()
    assert (out / "parity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len((out / "items.jsonl").read_text().splitlines()) == 9


def test_from_report_records_an_earlier_run(tmp_path: Path, sim: SimProcess,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert parity("--standard", sim.url, "--candidate", sim.url, "--samples", "2", "--tasks", "reasoning",
                  "--tolerance", "0.9", "--out", str(out)) == 0
    config = tmp_path / "duet.yaml"
    shutil.copy(DEMO, config)
    report_path = out / "parity.json"
    assert duet(["parity", "--from-report", str(report_path), "--write-policy", str(config), "--variant", "fast"]) == 0
    assert "allowed_tasks_source" in config.read_text()

    assert duet(["parity", "--from-report", str(report_path)]) == 2
    assert "needs --write-policy" in capsys.readouterr().err
    report = json.loads(report_path.read_text())
    report["tasks"]["reasoning"]["verdict"] = "allowed" if report["tasks"]["reasoning"]["verdict"] != "allowed" else "x"
    report_path.write_text(json.dumps(report))
    before = config.read_text()
    assert duet(["parity", "--from-report", str(report_path), "--write-policy", str(config), "--variant", "fast"]) == 2
    assert "does not match its content" in capsys.readouterr().err and config.read_text() == before


def test_urls_are_required_without_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parity("--out", str(tmp_path)) == 2
    assert "--standard URL and --candidate URL are required" in capsys.readouterr().err
