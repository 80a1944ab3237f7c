"""quantize.build's checks that need no llmcompressor: the source model must be a plain
full-precision folder, and the finished folder replaces the old one by rename. The real build
(llmcompressor in .venv-quantize) runs in the slow test below and in `make checkpoints`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from quantize.build import check_source, replace_folder
from quantize.errors import BuildError
from quantize.marker import is_current, read_marker
from quantize.recipe import load_recipe
from serving.local_model import LocalModelPaths, default_cache_dir

REPO = Path(__file__).resolve().parents[2]
QUANTIZE_READY = REPO / ".venv-quantize" / ".installed"
LOCAL_MODEL = LocalModelPaths(default_cache_dir()).model_dir


def test_source_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="no config.json"):
        check_source(tmp_path)


def test_source_with_a_quantization_config_is_refused(tmp_path: Path) -> None:
    # What a GGUF-loaded model's config would carry if the conversion had kept it.
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "gguf"}}))
    with pytest.raises(BuildError, match="already declares a quantization_config"):
        check_source(tmp_path)


def test_plain_source_passes(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "dtype": "bfloat16"}))
    check_source(tmp_path)


@pytest.mark.skipif(not (LOCAL_MODEL / "config.json").is_file(), reason="needs `make local-model`")
def test_the_local_model_has_no_leftover_gguf_quantization_config() -> None:
    check_source(LOCAL_MODEL)


def test_replace_folder_swaps_in_the_new_and_leaves_no_partial(tmp_path: Path) -> None:
    out, staging = tmp_path / "ckpt", tmp_path / "ckpt.partial"
    out.mkdir()
    (out / "old.txt").write_text("old")
    staging.mkdir()
    (staging / "new.txt").write_text("new")
    replace_folder(staging, out)
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_replace_folder_into_a_new_place(tmp_path: Path) -> None:
    staging = tmp_path / "ckpt.partial"
    staging.mkdir()
    replace_folder(staging, tmp_path / "ckpt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


@pytest.mark.timeout(1800)
@pytest.mark.slow
@pytest.mark.skipif(not QUANTIZE_READY.exists(), reason="needs `make quantize-env`")
@pytest.mark.skipif(not (LOCAL_MODEL / "config.json").is_file(), reason="needs `make local-model`")
def test_data_free_fp8_build_writes_a_verified_marked_checkpoint_then_reuses_it(tmp_path: Path) -> None:
    # fp8-dynamic is the recipe without calibration: the quickest real llmcompressor run.
    out = tmp_path / "fp8"
    command = [str(REPO / ".venv-quantize" / "bin" / "python"), "-m", "quantize.build",
               "--recipe", "fp8-dynamic", "--model", str(LOCAL_MODEL), "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    first = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1700)
    assert first.returncode == 0, first.stderr[-3000:]
    config = json.loads((out / "config.json").read_text())
    assert config["quantization_config"]["quant_method"] == "compressed-tensors"
    assert config["quantization_config"]["format"] == "float-quantized"
    marker = read_marker(out)
    assert marker is not None and marker.greedy_answer.strip()
    assert is_current(out, load_recipe("fp8-dynamic").fingerprint(), marker.model_sha256)
    assert not (tmp_path / "fp8.partial").exists()
    second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0 and "up to date" in second.stdout
