"""A quantization recipe: an llmcompressor recipe file with Duet's calibration settings beside it.

A recipe file (``quantize/recipes/NAME.yaml``) is an llmcompressor recipe (``*_stage`` ->
``*_modifiers`` -> modifier type -> arguments) plus one ``duet:`` section that llmcompressor never
sees: which calibration file, how many samples, how many tokens each (or ``calibration: null`` for a
data-free recipe). Loading checks the structure and the schemes here, without llmcompressor, so the
gateway's venv can refuse a bad recipe before a quantization venv is started; errors name the path
(``quant_stage.quant_modifiers.GPTQModifier.scheme``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from quantize.errors import RecipeError

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
CALIBRATION_DIR = Path(__file__).resolve().parent / "calibration"

# The modifiers Duet's recipes may use: the post-training ones that write a compressed-tensors
# checkpoint vLLM serves (pruning and training-aware modifiers are out of scope).
MODIFIERS = frozenset({"GPTQModifier", "QuantizationModifier", "SmoothQuantModifier", "AWQModifier"})
# compressed-tensors preset scheme names (compressed_tensors.quantization.quant_scheme.PRESET_SCHEMES)
# that vLLM serves; a test checks each is still a preset of the installed compressed-tensors.
PRESET_SCHEMES = frozenset({
    "W4A16", "W4A16_ASYM", "W8A16", "W8A8", "INT8", "FP8", "FP8_DYNAMIC", "FP8_BLOCK", "W4AFP8",
    "NVFP4A16", "NVFP4", "MXFP4A16", "MXFP4",
})
QUANT_TYPES = frozenset({"int", "float"})
STRATEGIES = frozenset({"tensor", "channel", "group", "block", "token", "tensor_group"})


@dataclass(frozen=True, slots=True)
class Calibration:
    """Which calibration texts a recipe runs, and how many tokens of how many of them."""

    file: Path
    samples: int
    max_seq_length: int


@dataclass(frozen=True, slots=True)
class Recipe:
    """One loaded recipe. ``stages`` is the llmcompressor part, exactly as written in the file."""

    name: str
    path: Path
    stages: dict[str, Any]
    calibration: Calibration | None
    schemes: tuple[str, ...]

    def llmcompressor_yaml(self) -> str:
        """The recipe as llmcompressor reads it: the file without Duet's ``duet:`` section."""
        return str(yaml.safe_dump(self.stages, sort_keys=False))

    def fingerprint(self) -> str:
        """SHA-256 over what the recipe does (its stages and calibration settings, not its comments
        or layout) and its calibration texts: a change to either is a new recipe."""
        settings = None
        if self.calibration is not None:
            settings = [self.calibration.samples, self.calibration.max_seq_length]
        meaning = json.dumps({"stages": self.stages, "calibration": settings}, sort_keys=True)
        digest = hashlib.sha256(meaning.encode())
        if self.calibration is not None:
            digest.update(b"\0" + self.calibration.file.read_bytes())
        return digest.hexdigest()


def recipe_names() -> list[str]:
    """The recipes shipped in ``quantize/recipes/``, by name."""
    return sorted(path.stem for path in RECIPES_DIR.glob("*.yaml"))


def resolve(name_or_path: str) -> Path:
    """A shipped recipe's file by name, or a recipe file given by path."""
    if name_or_path in recipe_names():
        return RECIPES_DIR / f"{name_or_path}.yaml"
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path
    raise RecipeError(f"unknown recipe {name_or_path!r}: use one of {', '.join(recipe_names())} or a .yaml file")


def load_recipe(name_or_path: str) -> Recipe:
    """Load and check a recipe; raise ``RecipeError`` naming the path of the first problem."""
    path = resolve(name_or_path)
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path}: not YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise RecipeError(f"{path}: a recipe is a mapping of stages")
    document = dict(document)
    calibration = check_calibration(document.pop("duet", None), f"{path}: duet")
    schemes = check_stages(document, str(path))
    return Recipe(name=path.stem, path=path, stages=document, calibration=calibration, schemes=schemes)


def check_calibration(settings: object, where: str) -> Calibration | None:
    if not isinstance(settings, dict) or "calibration" not in settings:
        raise RecipeError(f"{where}: needs `calibration:` (settings, or null for a data-free recipe)")
    unknown = set(settings) - {"calibration"}
    if unknown:
        raise RecipeError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    calibration = settings["calibration"]
    if calibration is None:
        return None
    where = f"{where}.calibration"
    if not isinstance(calibration, dict) or set(calibration) != {"file", "samples", "max_seq_length"}:
        raise RecipeError(f"{where}: needs exactly file, samples, max_seq_length")
    file = CALIBRATION_DIR / str(calibration["file"])
    if not file.is_file():
        raise RecipeError(f"{where}.file: {file} does not exist")
    for key in ("samples", "max_seq_length"):
        value = calibration[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise RecipeError(f"{where}.{key}: a positive integer, not {value!r}")
    return Calibration(file, calibration["samples"], calibration["max_seq_length"])


def check_stages(document: dict[str, Any], where: str) -> tuple[str, ...]:
    """Check every stage and modifier; return the quantization schemes named, in order."""
    schemes: list[str] = []
    if not any(key.endswith("_stage") for key in document):
        raise RecipeError(f"{where}: no `*_stage` section")
    for stage_key, stage in document.items():
        if not stage_key.endswith("_stage") or not isinstance(stage, dict):
            raise RecipeError(f"{where}: {stage_key}: expected a `*_stage` mapping")
        for group_key, group in stage.items():
            if not group_key.endswith("_modifiers") or not isinstance(group, dict):
                raise RecipeError(f"{where}: {stage_key}.{group_key}: expected a `*_modifiers` mapping")
            for modifier, arguments in group.items():
                path = f"{stage_key}.{group_key}.{modifier}"
                if modifier not in MODIFIERS:
                    raise RecipeError(f"{where}: {path}: unknown modifier (known: {', '.join(sorted(MODIFIERS))})")
                if not isinstance(arguments, dict):
                    raise RecipeError(f"{where}: {path}: arguments must be a mapping")
                schemes += modifier_schemes(arguments, f"{where}: {path}")
    if not schemes:
        raise RecipeError(f"{where}: no modifier names a quantization scheme or config_groups")
    return tuple(schemes)


def modifier_schemes(arguments: dict[str, Any], where: str) -> list[str]:
    """The schemes one modifier applies: a preset name, or a description of each config group."""
    scheme = arguments.get("scheme")
    if scheme is not None:
        if scheme not in PRESET_SCHEMES:
            raise RecipeError(f"{where}.scheme: {scheme!r} is not a known preset ({', '.join(sorted(PRESET_SCHEMES))})")
        return [str(scheme)]
    return [check_group(group, f"{where}.config_groups.{name}")
            for name, group in (arguments.get("config_groups") or {}).items()]


def check_group(group: object, where: str) -> str:
    """Check one config group's weight arguments; return a short description (``int4-group64``)."""
    if not isinstance(group, dict) or not group.get("targets"):
        raise RecipeError(f"{where}: needs `targets`")
    weights = group.get("weights")
    if not isinstance(weights, dict):
        raise RecipeError(f"{where}.weights: needs a mapping")
    bits, kind, strategy = weights.get("num_bits"), weights.get("type"), weights.get("strategy")
    if bits not in range(2, 9):
        raise RecipeError(f"{where}.weights.num_bits: 2 to 8, not {bits!r}")
    if kind not in QUANT_TYPES:
        raise RecipeError(f"{where}.weights.type: one of {', '.join(sorted(QUANT_TYPES))}, not {kind!r}")
    if strategy not in STRATEGIES:
        raise RecipeError(f"{where}.weights.strategy: one of {', '.join(sorted(STRATEGIES))}, not {strategy!r}")
    if strategy == "group":
        size = weights.get("group_size")
        if not isinstance(size, int) or size < 2 or size % 2:
            raise RecipeError(f"{where}.weights.group_size: an even integer for strategy group, not {size!r}")
        return f"{kind}{bits}-group{size}"
    return f"{kind}{bits}-{strategy}"
