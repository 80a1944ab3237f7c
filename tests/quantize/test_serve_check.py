"""quantize.serve_check's bookkeeping: which variants it starts and how its table reads. The real
replicas it starts are exercised by running it (docs/quantize.md) and by test_checkpoints_serve."""

from __future__ import annotations

from pathlib import Path

from quantize.serve_check import PROMPTS, VariantResult, default_variants, error_line, markdown
from serving.local_model import LocalModelPaths


def test_variants_are_bf16_then_each_built_checkpoint_w8a8_in_both_modes(tmp_path: Path) -> None:
    paths = LocalModelPaths(tmp_path)
    assert [(v.name, v.enforce_eager) for v in default_variants(paths)] == [("bf16", False)]
    for recipe in ("w4a16", "w8a8-int8"):
        paths.quantized_dir(recipe).mkdir(parents=True)
        (paths.quantized_dir(recipe) / "config.json").write_text("{}")
    assert [(v.name, v.enforce_eager) for v in default_variants(paths)] == [
        ("bf16", False), ("w4a16", False), ("w8a8-int8", False), ("w8a8-int8", True),
    ]


def test_table_has_a_row_per_variant_and_shows_failures() -> None:
    ok = VariantResult("w4a16", False, True, 90.0, dict.fromkeys(PROMPTS, " Paris.\nIt|is"), 46.5)
    failed = VariantResult("fp8-dynamic", True, False, error="no healthy /health within 300 s")
    table = markdown([ok, failed]).splitlines()
    assert len(table) == 4
    assert table[2].startswith("| w4a16 | compiled | 90.0 | 46.5 |")
    assert table[2].count(" Paris.⏎It\\|is") == len(PROMPTS)  # newlines and pipes cannot break the table
    assert "| fp8-dynamic | eager | - | - | failed: no healthy /health within 300 s |" in table[3]


def test_failure_reason_is_the_last_error_line_not_a_trailing_warning() -> None:
    message = "replica exited with 1\nTraceback\nRuntimeError: operator torchvision::nms does not exist\n  warnings.warn(\n"
    assert error_line(message) == "RuntimeError: operator torchvision::nms does not exist"
    assert error_line("no healthy /health within 300 s\n(no log)") == "no healthy /health within 300 s"
