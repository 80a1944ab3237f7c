"""`duet quantize` (gateway/cli/quantize.py): bad input is refused with a clear message before
anything runs; a current checkpoint is not rebuilt; otherwise the build runs with the quantization
interpreter on this checkout. The interpreter is replaced here by a small script that records how
it was called (the real one, with llmcompressor, is exercised by `make checkpoints` and the slow
tests): a real build takes minutes."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.cli.quantize import REPO, check_request
from quantize.marker import BuildMarker, content_hash, write_marker
from quantize.recipe import load_recipe
from serving.local_model import LocalModelPaths


def model_folder(root: Path) -> Path:
    folder = root / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (folder / "model.safetensors").write_bytes(b"\x00" * 32)
    return folder


def recording_python(root: Path, exit_code: int = 0) -> Path:
    """A stand-in interpreter: writes its argv, cwd and PYTHONPATH to calls.json, exits with ``exit_code``."""
    script = root / "python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"open({str(root / 'calls.json')!r}, 'w').write(json.dumps("
        "{'argv': sys.argv[1:], 'cwd': os.getcwd(), 'pythonpath': os.environ.get('PYTHONPATH', '')}))\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["quantize", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_unknown_recipe_is_refused_with_the_known_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "--recipe", "w2a2", "--model", str(model_folder(tmp_path)),
                           "--python", str(recording_python(tmp_path)))
    assert code == 2
    assert "unknown recipe 'w2a2'" in err and "w4a16" in err and "w8a8-int8" in err
    assert not (tmp_path / "calls.json").exists()


def test_missing_model_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "--recipe", "w4a16", "--model", str(tmp_path / "nowhere"),
                           "--python", str(recording_python(tmp_path)))
    assert code == 2
    assert f"model folder {tmp_path / 'nowhere'} does not exist" in err


def test_folder_without_config_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(capsys, "--recipe", "w4a16", "--model", str(tmp_path / "empty"),
                           "--python", str(recording_python(tmp_path)))
    assert code == 2
    assert "has no config.json" in err


def test_missing_quantization_venv_says_how_to_make_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "--recipe", "w4a16", "--model", str(model_folder(tmp_path)),
                           "--python", str(tmp_path / "no-venv" / "python"))
    assert code == 2
    assert "make quantize-env" in err


def test_out_equal_to_model_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = model_folder(tmp_path)
    code, _, err = run_cli(capsys, "--recipe", "w4a16", "--model", str(model), "--out", str(model),
                           "--python", str(recording_python(tmp_path)))
    assert code == 2
    assert "--out must differ from --model" in err


def test_missing_recipe_argument_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["quantize"])
    assert exit_info.value.code == 2
    assert "--recipe" in capsys.readouterr().err


def test_defaults_are_the_local_model_and_its_quantized_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    paths = LocalModelPaths(tmp_path / "cache" / "duet")
    paths.model_dir.mkdir(parents=True)
    (paths.model_dir / "config.json").write_text("{}")
    request = check_request("w8a8-int8", None, None, recording_python(tmp_path))
    assert request.model_dir == paths.model_dir
    assert request.out_dir == paths.quantized_dir("w8a8-int8")


def test_missing_local_model_says_how_to_make_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, _, err = run_cli(capsys, "--recipe", "w4a16", "--python", str(recording_python(tmp_path)))
    assert code == 2
    assert "make local-model" in err


def test_stale_checkpoint_runs_the_build_on_this_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, out = model_folder(tmp_path), tmp_path / "out"
    code, _, _ = run_cli(capsys, "--recipe", "w4a16", "--model", str(model), "--out", str(out),
                         "--python", str(recording_python(tmp_path)))
    assert code == 0
    call = json.loads((tmp_path / "calls.json").read_text())
    assert call["argv"] == ["-m", "quantize.build", "--recipe", str(load_recipe("w4a16").path),
                            "--model", str(model), "--out", str(out)]
    assert call["cwd"] == str(REPO)
    assert call["pythonpath"].split(":")[0] == str(REPO)


def test_build_failure_is_the_commands_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli(capsys, "--recipe", "w4a16", "--model", str(model_folder(tmp_path)),
                         "--out", str(tmp_path / "out"), "--python", str(recording_python(tmp_path, exit_code=3)))
    assert code == 3


def current_checkpoint(model: Path, out: Path, recipe: str) -> None:
    out.mkdir()
    (out / "config.json").write_text("{}")
    write_marker(out, BuildMarker(
        recipe=recipe, recipe_sha256=load_recipe(recipe).fingerprint(), model_sha256=content_hash(model),
        checkpoint_sha256=content_hash(out), quantization_format="pack-quantized", greedy_answer=" Paris",
        build_seconds=1.0, llmcompressor_version="0.14.0.1",
    ))


def test_current_checkpoint_is_not_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, out = model_folder(tmp_path), tmp_path / "out"
    current_checkpoint(model, out, "w4a16")
    code, stdout, _ = run_cli(capsys, "--recipe", "w4a16", "--model", str(model), "--out", str(out),
                              "--python", str(recording_python(tmp_path)))
    assert code == 0
    assert "up to date (w4a16)" in stdout
    assert not (tmp_path / "calls.json").exists()


def test_changed_source_model_or_force_rebuilds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, out = model_folder(tmp_path), tmp_path / "out"
    current_checkpoint(model, out, "w4a16")
    python = str(recording_python(tmp_path))
    run_cli(capsys, "--recipe", "w4a16", "--model", str(model), "--out", str(out), "--python", python, "--force")
    assert json.loads((tmp_path / "calls.json").read_text())["argv"][-1] == "--force"
    (tmp_path / "calls.json").unlink()
    (model / "model.safetensors").write_bytes(b"\x01" * 32)
    run_cli(capsys, "--recipe", "w4a16", "--model", str(model), "--out", str(out), "--python", python)
    assert (tmp_path / "calls.json").exists()
