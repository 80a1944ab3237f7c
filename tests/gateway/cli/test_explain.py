"""duet explain shows the cache and session verdicts: a replica said to hold the prompt is
credited its blocks, and a seated session keeps its variant over the router's choice."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from gateway.cli import explain

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
PROMPT = "Extract the dates from this: " + "on 2026-12-04 the replica restarted; " * 120


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict:
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"headers": {"x-session-id": "conv-7", "x-duet-task": "extraction"},
                                   "body": {"model": "smollm2", "max_tokens": 16,
                                            "messages": [{"role": "user", "content": PROMPT}]}}))
    parser = argparse.ArgumentParser()
    explain.register(parser.add_subparsers())
    args = parser.parse_args(["explain", "--config", str(DEMO), str(request), "--json", *flags])
    assert args.run(args) == 0
    return json.loads(capsys.readouterr().out)


def test_cold_and_new_by_default(tmp_path, capsys):
    report = run(tmp_path, capsys)
    assert all(entry["cached_tokens"] == 0 for entry in report["replicas"].values())
    assert report["prefix_blocks"] > 0
    assert report["session"]["turn"] == 1 and report["session"]["moved_from"] is None


def test_a_warm_replica_is_credited_its_cached_prompt(tmp_path, capsys):
    report = run(tmp_path, capsys, "--warm", "smollm2/standard/0")
    replicas = report["replicas"]
    assert replicas["smollm2/standard/0"]["cached_tokens"] == report["prefix_blocks"] * 256
    assert replicas["smollm2/fast/0"]["cached_tokens"] == 0


def test_a_seated_session_keeps_its_variant_and_says_so(tmp_path, capsys):
    cold = run(tmp_path, capsys)
    assert cold["decision"]["variant"] == "fast"  # extraction is proven on fast, and fast is cheaper
    report = run(tmp_path, capsys, "--seated", "smollm2/standard/0")
    session = report["session"]
    assert report["decision"]["variant"] == "standard"  # a session on standard does not move down
    assert (session["turn"], session["kept_over"], session["moved_from"]) == (2, "fast", None)
    assert report["decision"]["reason"].endswith(";session")
    assert session["header"].endswith("variant=standard; kept-over=fast")


def test_an_unknown_replica_is_an_error(tmp_path, capsys):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"model": "smollm2", "messages": [{"role": "user", "content": "hi"}]}))
    parser = argparse.ArgumentParser()
    explain.register(parser.add_subparsers())
    args = parser.parse_args(["explain", "--config", str(DEMO), str(request), "--warm", "nope/0"])
    assert args.run(args) == 1
    assert "no replica 'nope/0'" in capsys.readouterr().err
