"""The real calibration paragraph of docs/routing.md is the committed calibration file rendered."""

from __future__ import annotations

import json

import pytest

from loadtests.real import calibration_render as calibration_docs


def test_the_docs_paragraph_is_the_committed_results_rendered():
    results = calibration_docs.load()
    assert [name for name, _ in results] == ["calibration-avx2.json"]
    assert calibration_docs.section(calibration_docs.DOCS.read_text()) == calibration_docs.render(results)


def test_the_paragraph_compares_the_measured_block_with_the_twins_prior(tmp_path):
    [(name, result)] = calibration_docs.load()
    result["speed"] |= {"prefill_tokens_per_s": 85.1, "decode_s_per_token": 0.02, "step_s_per_seq": 0.07}
    text = calibration_docs.paragraph(name, result)
    assert "prefill is 2.00x and a one-stream token 2.00x" in text
    assert "1, 2, 4, 8 streams" in text and "docs/results/calibration-avx2.json" in text


def test_write_needs_the_markers(tmp_path):
    docs = tmp_path / "routing.md"
    docs.write_text(f"a\n{calibration_docs.START}\nold\n{calibration_docs.END}\nb\n")
    calibration_docs.write(docs)
    assert docs.read_text() == f"a\n{calibration_docs.render(calibration_docs.load())}\nb\n"
    docs.write_text("no markers")
    with pytest.raises(SystemExit, match="no calibration-real markers"):
        calibration_docs.write(docs)


def test_every_committed_calibration_has_what_the_paragraph_reads():
    for name, result in calibration_docs.load():
        assert {"summary", "profile_prior", "samples", "notes", "launch_profile"} <= set(result), name
        json.dumps(result)
