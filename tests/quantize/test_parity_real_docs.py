"""What docs/parity.md's measured sections render of the committed evidence in docs/parity-real (the
committed sections are checked with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import json
import shutil

from quantize.parity import real_docs


def test_every_variant_and_online_run_is_rendered():
    reports = dict(real_docs.offline_reports())
    assert set(real_docs.ORDER) <= set(reports)
    offline = real_docs.render_offline(list(reports.items()))
    assert offline.count("**not allowed**") == sum(t["verdict"] != "allowed" for r in reports.values()
                                                    for t in r["tasks"].values())
    online = real_docs.render_online(real_docs.online_runs())
    assert "`online-fast-int8.json` | resend" in online and "`online-fast-int8-live.json` | live-answer" in online
    assert "evidence" not in online


def test_a_new_report_is_rendered_after_the_known_ones(tmp_path):
    evidence = tmp_path / "parity-real"
    shutil.copytree(real_docs.EVIDENCE / "fast-spec", evidence / "fast-spec", ignore=shutil.ignore_patterns("*.png", "*.jsonl"))
    shutil.copytree(evidence / "fast-spec", evidence / "fast-new")
    report = json.loads((evidence / "fast-new" / "parity.json").read_text())
    report["tasks"]["chat"] |= {"verdict": "not allowed", "candidate_acc": 0.5}
    (evidence / "fast-new" / "parity.json").write_text(json.dumps(report))
    assert [v for v, _ in real_docs.offline_reports(evidence)] == ["fast-spec", "fast-new"]
    assert "| fast-new | 50% / 100%" in real_docs.render_offline(real_docs.offline_reports(evidence))
