"""Build one quantized checkpoint with llmcompressor: calibrate, save, verify, mark, rename.

Runs inside ``.venv-quantize`` (llmcompressor, torch CPU, its own transformers), started by
``duet quantize`` as ``python -m quantize.build --recipe R --model DIR --out DIR``. The result is a
compressed-tensors checkpoint vLLM serves. Steps:

1. refuse a source model that is not a plain full-precision Hugging Face folder;
2. skip the build when the output's marker matches the recipe and the source model (quantize.marker);
3. run the recipe with ``llmcompressor.oneshot`` into ``OUT.partial`` (calibration texts rendered
   with the model's chat template, truncated to the recipe's token budget);
4. verify: ``config.json`` declares a compressed-tensors ``quantization_config``, the checkpoint loads
   back with transformers and completes a greedy prompt with some text;
5. write the marker last, then swap the folder into place (rename), so a crash never leaves a
   half-built checkpoint where ``OUT`` is expected.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from quantize.errors import BuildError, RecipeError
from quantize.marker import BuildMarker, content_hash, is_current, write_marker
from quantize.recipe import Calibration, Recipe, load_recipe

VERIFY_PROMPT = "The capital of France is"
VERIFY_TOKENS = 8


def check_source(model_dir: Path) -> None:
    """A source is a Hugging Face folder with a config and no quantization of its own.

    The local model was converted from a GGUF, whose loader sets a ``quantization_config``; a leftover
    one would make llmcompressor refuse the model (or vLLM look for a GGUF), so it is checked here.
    """
    config_path = model_dir / "config.json"
    if not config_path.is_file():
        raise BuildError(f"{model_dir}: no config.json (not a Hugging Face model folder)")
    config = json.loads(config_path.read_text())
    if config.get("quantization_config"):
        raise BuildError(f"{model_dir}: config.json already declares a quantization_config; "
                         "quantize a full-precision (bf16/fp16/fp32) model")


def calibration_dataset(calibration: Calibration, tokenizer: Any) -> Any:
    """The calibration texts as a tokenized ``datasets.Dataset`` (input_ids, attention_mask)."""
    from datasets import Dataset

    items = [json.loads(line) for line in calibration.file.read_text().splitlines() if line.strip()]
    texts = [tokenizer.apply_chat_template(item["messages"], tokenize=False) for item in items]
    texts = texts[: calibration.samples]
    encoded = tokenizer(texts, max_length=calibration.max_seq_length, truncation=True,
                        add_special_tokens=False)
    return Dataset.from_dict({"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]})


def run_recipe(recipe: Recipe, model_dir: Path, out_dir: Path) -> None:
    """Apply the recipe to the model with llmcompressor and save the compressed checkpoint."""
    import torch
    from llmcompressor import oneshot
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # float32, not the checkpoint's bf16: torch's eager bf16 matmuls on this CPU are ~6x slower than
    # fp32 (a 135M forward: 12.5 s against 2.3 s). vLLM serves the result with --dtype bfloat16 anyway.
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    calibration: dict[str, Any] = {}
    if recipe.calibration is not None:
        calibration = {
            "dataset": calibration_dataset(recipe.calibration, tokenizer),
            "num_calibration_samples": recipe.calibration.samples,
            "max_seq_length": recipe.calibration.max_seq_length,
            "shuffle_calibration_samples": False,  # the set is already a seeded mix
        }
    oneshot(model=model, processor=tokenizer, recipe=recipe.llmcompressor_yaml(), **calibration)
    restore_unquantized_dtype(model, source_dtype(model_dir))
    model.save_pretrained(out_dir, save_compressed=True)
    tokenizer.save_pretrained(out_dir)


def source_dtype(model_dir: Path) -> Any:
    """The torch dtype the source checkpoint is stored in (``dtype`` or the older ``torch_dtype``)."""
    import torch

    config = json.loads((model_dir / "config.json").read_text())
    name = config.get("dtype") or config.get("torch_dtype") or "float32"
    return getattr(torch, str(name))


def restore_unquantized_dtype(model: Any, dtype: Any) -> None:
    """Give every parameter the recipe left unquantized (embeddings, norms) the source's dtype again.

    The model was calibrated in float32 for speed only; the quantized layers keep their float32
    weights and scales (compressed-tensors derives the packed integers from them at save time, and
    rounding them to bf16 first could move an int8 value by one step).
    """
    for module in model.modules():
        if getattr(module, "quantization_scheme", None) is None:
            for parameter in module.parameters(recurse=False):
                parameter.data = parameter.data.to(dtype)
    model.config.dtype = dtype


def verify(out_dir: Path) -> tuple[str, str]:
    """Check the checkpoint declares compressed-tensors and loads; return (format, greedy answer)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = json.loads((out_dir / "config.json").read_text())
    quantization = config.get("quantization_config") or {}
    if quantization.get("quant_method") != "compressed-tensors" or not quantization.get("config_groups"):
        raise BuildError(f"{out_dir}: config.json has no compressed-tensors quantization_config")
    tokenizer = AutoTokenizer.from_pretrained(out_dir)
    model = AutoModelForCausalLM.from_pretrained(out_dir)
    ids = tokenizer(VERIFY_PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=VERIFY_TOKENS, do_sample=False)
    answer = tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    if not answer.strip():
        raise BuildError(f"{out_dir}: the checkpoint loads but greedy-completes {VERIFY_PROMPT!r} with nothing")
    return str(quantization.get("format", "")), answer


def replace_folder(staging: Path, out_dir: Path) -> None:
    """Move ``staging`` to ``out_dir``; an older ``out_dir`` is renamed aside first, then removed."""
    old = out_dir.with_name(out_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out_dir.exists():
        out_dir.rename(old)
    staging.rename(out_dir)
    shutil.rmtree(old, ignore_errors=True)


def build(recipe: Recipe, model_dir: Path, out_dir: Path, *, force: bool = False) -> BuildMarker | None:
    """Build ``out_dir`` unless it is current; return its new marker, or ``None`` when it was reused."""
    check_source(model_dir)
    recipe_sha, model_sha = recipe.fingerprint(), content_hash(model_dir)
    if not force and is_current(out_dir, recipe_sha, model_sha):
        return None
    import llmcompressor

    started = time.monotonic()
    staging = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    run_recipe(recipe, model_dir, staging)
    quantization_format, answer = verify(staging)
    marker = BuildMarker(
        recipe=recipe.name, recipe_sha256=recipe_sha, model_sha256=model_sha,
        checkpoint_sha256=content_hash(staging), quantization_format=quantization_format,
        greedy_answer=answer, build_seconds=round(time.monotonic() - started, 1),
        llmcompressor_version=llmcompressor.__version__,
    )
    write_marker(staging, marker)
    replace_folder(staging, out_dir)
    return marker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quantize.build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", required=True, help="recipe name or .yaml file")
    parser.add_argument("--model", required=True, type=Path, help="full-precision Hugging Face folder")
    parser.add_argument("--out", required=True, type=Path, help="checkpoint folder to write")
    parser.add_argument("--force", action="store_true", help="rebuild even when the marker matches")
    args = parser.parse_args(argv)
    # One thread unless told otherwise: on this shared 2-core machine two torch threads under
    # contention were several times slower than one (docs/quantize.md).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Everything is local: never let transformers or datasets reach for a hub.
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    try:
        marker = build(load_recipe(args.recipe), args.model, args.out, force=args.force)
    except (RecipeError, BuildError) as exc:
        print(f"quantize: {exc}", file=sys.stderr)
        return 2
    if marker is None:
        print(f"{args.out}: up to date ({args.recipe})")
    else:
        print(f"{args.out}: {marker.recipe} built in {marker.build_seconds} s "
              f"({marker.quantization_format}); greedy {VERIFY_PROMPT!r} -> {marker.greedy_answer!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
