"""Recipe files: each shipped recipe parses, names valid schemes and calibration; bad recipes are
refused with their path; the calibration set is what its seeded generator makes. The check against
the installed llmcompressor itself needs .venv-quantize (slow)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from quantize.calibration.generate import DEFAULT_FILE, MAKERS, PER_TASK, render
from quantize.errors import RecipeError
from quantize.recipe import PRESET_SCHEMES, load_recipe, recipe_names

REPO = Path(__file__).resolve().parents[2]
QUANTIZE_PYTHON = REPO / ".venv-quantize" / "bin" / "python"
QUANTIZE_READY = REPO / ".venv-quantize" / ".installed"


def test_the_three_issue_recipes_ship() -> None:
    assert {"w4a16", "w8a8-int8", "fp8-dynamic"} <= set(recipe_names())


@pytest.mark.parametrize(
    ("name", "schemes", "calibrated"),
    [
        ("w4a16", ("int4-group64",), True),
        ("w8a8-int8", ("W8A8",), True),
        ("fp8-dynamic", ("FP8_DYNAMIC",), False),
    ],
)
def test_shipped_recipe_parses_with_its_scheme(name: str, schemes: tuple[str, ...], calibrated: bool) -> None:
    recipe = load_recipe(name)
    assert recipe.name == name
    assert recipe.schemes == schemes
    assert (recipe.calibration is not None) == calibrated
    assert "duet" not in recipe.llmcompressor_yaml()
    assert recipe.llmcompressor_yaml().startswith("quant_stage:")


def test_w4a16_group_size_divides_the_local_models_layer_inputs() -> None:
    # SmolLM2-135M: hidden 576, MLP 1536; llmcompressor refuses a group size that does not divide them.
    group = load_recipe("w4a16").stages["quant_stage"]["quant_modifiers"]["GPTQModifier"]["config_groups"]["group_0"]
    assert 576 % group["weights"]["group_size"] == 0
    assert 1536 % group["weights"]["group_size"] == 0


def test_fingerprint_changes_with_the_recipe_file(tmp_path: Path) -> None:
    source = load_recipe("w4a16").path.read_text()
    first = tmp_path / "a.yaml"
    first.write_text(source)
    second = tmp_path / "b.yaml"
    second.write_text(source.replace("dampening_frac: 0.01", "dampening_frac: 0.02"))
    assert load_recipe(str(first)).fingerprint() == load_recipe("w4a16").fingerprint()
    assert load_recipe(str(second)).fingerprint() != load_recipe(str(first)).fingerprint()


def test_fingerprint_ignores_comments_and_layout(tmp_path: Path) -> None:
    # Editing what a recipe's comments say must not force an 11-minute rebuild.
    source = load_recipe("w8a8-int8").path.read_text()
    edited = tmp_path / "w8a8-int8.yaml"
    edited.write_text("# a new comment\n" + source.replace("smoothing_strength: 0.8", "smoothing_strength:   0.8"))
    assert load_recipe(str(edited)).fingerprint() == load_recipe("w8a8-int8").fingerprint()
    fewer = tmp_path / "fewer.yaml"
    fewer.write_text(source.replace("samples: 128", "samples: 64"))
    assert load_recipe(str(fewer)).fingerprint() != load_recipe("w8a8-int8").fingerprint()


BAD_RECIPES = [
    ("not: [valid", "not YAML"),
    ("- a list\n", "a mapping of stages"),
    ("duet: {calibration: null}\n", "no `*_stage` section"),
    ("quant_stage:\n  quant_modifiers:\n    QuantizationModifier: {scheme: FP8_DYNAMIC}\n", "needs `calibration:`"),
    ("duet: {calibration: null, extra: 1}\nquant_stage: {}\n", "unknown key(s) extra"),
    ("duet: {calibration: null}\nquant_stage:\n  quant_modifiers:\n    MagicModifier: {scheme: W8A8}\n",
     "quant_stage.quant_modifiers.MagicModifier: unknown modifier"),
    ("duet: {calibration: null}\nquant_stage:\n  quant_modifiers:\n    QuantizationModifier: {scheme: W9A9}\n",
     "quant_stage.quant_modifiers.QuantizationModifier.scheme: 'W9A9' is not a known preset"),
    ("duet: {calibration: null}\nquant_stage:\n  quant_modifiers:\n    SmoothQuantModifier: {smoothing_strength: 0.8}\n",
     "no modifier names a quantization scheme"),
    ("duet: {calibration: null}\nquant_stage:\n  quant_modifiers:\n    GPTQModifier:\n      config_groups:\n"
     "        g: {targets: [Linear], weights: {num_bits: 4, type: int, strategy: group, group_size: 7}}\n",
     "config_groups.g.weights.group_size: an even integer"),
    ("duet: {calibration: null}\nquant_stage:\n  quant_modifiers:\n    GPTQModifier:\n      config_groups:\n"
     "        g: {targets: [Linear], weights: {num_bits: 16, type: int, strategy: channel}}\n",
     "config_groups.g.weights.num_bits: 2 to 8"),
    ("duet: {calibration: {file: missing.jsonl, samples: 8, max_seq_length: 64}}\n"
     "quant_stage:\n  quant_modifiers:\n    QuantizationModifier: {scheme: W8A8}\n", "missing.jsonl does not exist"),
    ("duet: {calibration: {file: default.jsonl, samples: 0, max_seq_length: 64}}\n"
     "quant_stage:\n  quant_modifiers:\n    QuantizationModifier: {scheme: W8A8}\n", "samples: a positive integer"),
]


@pytest.mark.parametrize(("text", "message"), BAD_RECIPES)
def test_bad_recipe_is_refused_naming_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(RecipeError) as error:
        load_recipe(str(path))
    assert message in str(error.value)


def test_unknown_recipe_name_lists_the_known_ones() -> None:
    with pytest.raises(RecipeError) as error:
        load_recipe("w3a3")
    assert "unknown recipe 'w3a3'" in str(error.value)
    assert "w4a16" in str(error.value)


def test_calibration_file_is_what_the_seeded_generator_makes() -> None:
    assert DEFAULT_FILE.read_text() == render()


def test_calibration_set_is_a_few_hundred_chats_of_every_task_type() -> None:
    items = [json.loads(line) for line in DEFAULT_FILE.read_text().splitlines()]
    assert len(items) == PER_TASK * len(MAKERS) >= 200
    assert {item["task"] for item in items} == set(MAKERS)
    for item in items:
        roles = [message["role"] for message in item["messages"]]
        assert roles == ["user", "assistant"]
        assert all(message["content"].strip() for message in item["messages"])
    # The recipes take the first N: interleaving keeps every task type among them.
    assert {item["task"] for item in items[:8]} == set(MAKERS)


@pytest.mark.slow
@pytest.mark.skipif(not QUANTIZE_READY.exists(), reason="needs `make quantize-env`")
def test_llmcompressor_parses_each_recipe_and_knows_its_presets() -> None:
    script = (
        "import sys, json\n"
        "from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES\n"
        "from llmcompressor.recipe import Recipe\n"
        "from quantize.recipe import load_recipe\n"
        "presets = json.loads(sys.argv[1])\n"
        "missing = sorted(set(presets) - set(PRESET_SCHEMES))\n"
        "assert not missing, missing\n"
        "for name in sys.argv[2:]:\n"
        "    recipe = Recipe.create_instance(load_recipe(name).llmcompressor_yaml())\n"
        "    print(name, [type(m).__name__ for m in recipe.modifiers])\n"
    )
    result = subprocess.run(
        [str(QUANTIZE_PYTHON), "-c", script, json.dumps(sorted(PRESET_SCHEMES)), *recipe_names()],
        cwd=REPO, env={"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=270,  # under pytest's 300 s: a hang is reported with its output
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "w8a8-int8 ['SmoothQuantModifier', 'GPTQModifier']" in result.stdout
    assert "w4a16 ['GPTQModifier']" in result.stdout
    assert "fp8-dynamic ['QuantizationModifier']" in result.stdout
