"""The build marker: a checkpoint is current only for the same recipe, the same source model and
its own unchanged content; Duet's markers never count in a folder's content hash."""

from __future__ import annotations

from pathlib import Path

from quantize.marker import MARKER_NAME, BuildMarker, content_hash, is_current, read_marker, write_marker


def checkpoint(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"quantization_config": {}}')
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)
    return folder


def marker_for(folder: Path, recipe_sha: str = "r1", model_sha: str = "m1") -> BuildMarker:
    return BuildMarker(
        recipe="w4a16", recipe_sha256=recipe_sha, model_sha256=model_sha,
        checkpoint_sha256=content_hash(folder), quantization_format="pack-quantized",
        greedy_answer=" Paris.", build_seconds=1.0, llmcompressor_version="0.14.0.1",
    )


def test_marked_folder_is_current_for_its_recipe_and_model(tmp_path: Path) -> None:
    folder = checkpoint(tmp_path / "ckpt")
    write_marker(folder, marker_for(folder))
    assert read_marker(folder) == marker_for(folder)
    assert is_current(folder, "r1", "m1")


def test_another_recipe_or_source_model_is_not_current(tmp_path: Path) -> None:
    folder = checkpoint(tmp_path / "ckpt")
    write_marker(folder, marker_for(folder))
    assert not is_current(folder, "r2", "m1")
    assert not is_current(folder, "r1", "m2")


def test_changed_or_missing_checkpoint_file_is_not_current(tmp_path: Path) -> None:
    folder = checkpoint(tmp_path / "ckpt")
    write_marker(folder, marker_for(folder))
    (folder / "model.safetensors").write_bytes(b"\x01" * 64)
    assert not is_current(folder, "r1", "m1")
    (folder / "model.safetensors").unlink()
    assert not is_current(folder, "r1", "m1")


def test_no_marker_or_a_foreign_one_is_not_current(tmp_path: Path) -> None:
    folder = checkpoint(tmp_path / "ckpt")
    assert read_marker(folder) is None
    assert not is_current(folder, "r1", "m1")
    (folder / MARKER_NAME).write_text('{"sha256": "abc"}')
    assert read_marker(folder) is None
    (folder / MARKER_NAME).write_text("not json")
    assert read_marker(folder) is None
    assert not is_current(tmp_path / "absent", "r1", "m1")


def test_content_hash_ignores_duet_markers_and_sees_names_and_bytes(tmp_path: Path) -> None:
    folder = checkpoint(tmp_path / "ckpt")
    before = content_hash(folder)
    (folder / ".duet-ready.json").write_text("{}")
    (folder / MARKER_NAME).write_text("{}")
    assert content_hash(folder) == before
    (folder / "model.safetensors").rename(folder / "other.safetensors")
    assert content_hash(folder) != before
