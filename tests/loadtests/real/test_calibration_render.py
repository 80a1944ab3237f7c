"""The real calibration paragraph of docs/routing.md: what it reads of the committed calibration file
(the committed paragraph is checked with every section by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import json

from loadtests.real import calibration_render as calibration_docs


def test_one_calibration_is_committed():
    assert [name for name, _ in calibration_docs.load()] == ["calibration-avx2.json"]


def test_the_paragraph_compares_the_measured_block_with_the_twins_prior(tmp_path):
    [(name, result)] = calibration_docs.load()
    result["speed"] |= {"prefill_tokens_per_s": 85.1, "decode_s_per_token": 0.02, "step_s_per_seq": 0.07}
    text = calibration_docs.paragraph(name, result)
    assert "prefill is 2.00x and a one-stream token 2.00x" in text
    assert "1, 2, 4, 8 streams" in text and "docs/results/calibration-avx2.json" in text


def test_every_committed_calibration_has_what_the_paragraph_reads():
    for name, result in calibration_docs.load():
        assert {"summary", "profile_prior", "samples", "notes", "launch_profile"} <= set(result), name
        json.dumps(result)
