"""docs/routing.md's length-quantile table is the committed replays rendered."""

from __future__ import annotations

import pytest

from loadtests import length_quantile_docs as docs


def test_the_docs_table_is_the_committed_replays_rendered():
    results = docs.load()
    assert {r["quantile"] for r in results} >= {0.1, 0.25, 0.5, 0.75}
    assert {r["start"] for r in results} == {0.0, 1260.0, 2340.0}
    assert docs.section(docs.DOCS.read_text()) == docs.render(results)


def replay(quantile, start, good, cost):
    option = "" if quantile == 0.5 else f" --length-quantile {quantile:g}"
    return {"command": f"duet replay --policy duet --start {start:g}{option}", "quantile": quantile, "start": start,
            "policies": {"duet": {"good_fraction": good, "cost_usd": cost}}}


def test_rows_are_quantiles_and_columns_windows():
    text = docs.render([replay(0.5, 0.0, 0.9874, 6.63), replay(0.1, 0.0, 0.9872, 6.7), replay(0.1, 1260.0, 0.99, 7.0)])
    assert "| planned at | tuning window (start 0) | held out (start 1260) |" in text
    assert "| p10 | 98.72% / $6.70 | 99.00% / $7.00 |" in text
    assert "| p50 (kept) | 98.74% / $6.63 | – |" in text


def test_write_needs_the_markers(tmp_path):
    path = tmp_path / "routing.md"
    path.write_text("no markers")
    with pytest.raises(SystemExit, match="no length-quantile markers"):
        docs.write(path)
