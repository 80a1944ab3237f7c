"""docs/parity.md's measured sections are the committed evidence in docs/parity-real rendered."""

from __future__ import annotations

import json
import shutil

import pytest

from quantize.parity import real_docs


def test_the_docs_sections_are_the_committed_evidence_rendered():
    text = real_docs.DOCS.read_text()
    for section, rendered in real_docs.rendered().items():
        assert section.within(text) == rendered, f"run python -m quantize.parity.real_docs ({section.name})"


def test_every_variant_and_online_run_is_rendered():
    reports = dict(real_docs.offline_reports())
    assert set(real_docs.ORDER) <= set(reports)
    offline = real_docs.render_offline(list(reports.items()))
    assert offline.count("**not allowed**") == sum(t["verdict"] != "allowed" for r in reports.values()
                                                    for t in r["tasks"].values())
    online = real_docs.render_online(real_docs.online_runs())
    assert "`online-fast-int8.json` | resend" in online and "`online-fast-int8-live.json` | live-answer" in online
    assert "evidence" not in online


def test_write_fills_the_markers_and_refuses_docs_without_them(tmp_path, monkeypatch):
    docs = tmp_path / "parity.md"
    docs.write_text(f"a\n{real_docs.OFFLINE.start}\nstale\n{real_docs.OFFLINE.end}\nb\n"
                    f"{real_docs.ONLINE.start}\n{real_docs.ONLINE.end}\nc\n")
    real_docs.write(docs)
    text = docs.read_text()
    assert "stale" not in text and text.startswith("a\n") and text.endswith("\nc\n")
    assert real_docs.OFFLINE.within(text) == real_docs.rendered()[real_docs.OFFLINE]
    docs.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no parity-real-offline markers"):
        real_docs.write(docs)


def test_a_new_report_is_rendered_after_the_known_ones(tmp_path):
    evidence = tmp_path / "parity-real"
    shutil.copytree(real_docs.EVIDENCE / "fast-spec", evidence / "fast-spec", ignore=shutil.ignore_patterns("*.png", "*.jsonl"))
    shutil.copytree(evidence / "fast-spec", evidence / "fast-new")
    report = json.loads((evidence / "fast-new" / "parity.json").read_text())
    report["tasks"]["chat"] |= {"verdict": "not allowed", "candidate_acc": 0.5}
    (evidence / "fast-new" / "parity.json").write_text(json.dumps(report))
    assert [v for v, _ in real_docs.offline_reports(evidence)] == ["fast-spec", "fast-new"]
    assert "| fast-new | 50% / 100%" in real_docs.render_offline(real_docs.offline_reports(evidence))
