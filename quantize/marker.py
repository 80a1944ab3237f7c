"""The marker that makes ``duet quantize`` idempotent.

A finished checkpoint folder holds ``.duet-quantized.json``: the recipe's fingerprint (recipe file
and calibration set), the source model's content hash, and the checkpoint's own content hash. The
marker is written last, inside the staging folder, before the folder is renamed into place: a folder
whose marker matches all three is complete and current and is reused as is; anything else (another
recipe, a changed source model, a damaged or partial checkpoint) is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

MARKER_NAME = ".duet-quantized.json"
# Duet's markers (this one, serving.local_model's ``.duet-ready.json``) describe a folder and are
# left out of its content hash, so writing them does not change what they record.
MARKER_PREFIX = ".duet-"


@dataclass(frozen=True, slots=True)
class BuildMarker:
    """What a checkpoint was built from, and what it held when it was verified."""

    recipe: str
    recipe_sha256: str
    model_sha256: str
    checkpoint_sha256: str
    quantization_format: str
    greedy_answer: str
    build_seconds: float
    llmcompressor_version: str


def content_hash(folder: Path) -> str:
    """SHA-256 over every file's relative path and bytes, Duet's markers excluded, in path order."""
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(MARKER_PREFIX))
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def read_marker(folder: Path) -> BuildMarker | None:
    """The folder's marker, or ``None`` when there is none or it is not one of ours."""
    try:
        return BuildMarker(**json.loads((folder / MARKER_NAME).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_marker(folder: Path, marker: BuildMarker) -> None:
    (folder / MARKER_NAME).write_text(json.dumps(asdict(marker), indent=2) + "\n")


def is_current(folder: Path, recipe_sha256: str, model_sha256: str) -> bool:
    """True when ``folder`` is a complete checkpoint of this recipe applied to this source model."""
    marker = read_marker(folder)
    return (
        marker is not None
        and marker.recipe_sha256 == recipe_sha256
        and marker.model_sha256 == model_sha256
        and marker.checkpoint_sha256 == content_hash(folder)
    )
