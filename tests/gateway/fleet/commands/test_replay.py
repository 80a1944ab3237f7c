"""``duet replay``'s command line: per-policy scrape intervals, and ``--rerun`` replacing some
policies' results in a file the same command wrote while keeping the others."""

from __future__ import annotations

import json

from gateway.cli import main

SHORT = ["replay", "--duration", "20", "--rate-scale", "0.2", "--compare", "--json"]


def test_llm_d_is_scraped_at_its_own_50_ms_and_the_rest_at_the_gateways_default(tmp_path):
    out = tmp_path / "r.json"
    assert main([*SHORT, "--out", str(out)]) == 0
    intervals = json.loads(out.read_text())["scrape_interval_s"]
    assert intervals["llm-d-default"] == 0.05
    assert {name for name, s in intervals.items() if s == 1.0} == set(intervals) - {"llm-d-default"}


def test_rerun_replaces_the_named_policies_and_keeps_the_others(tmp_path):
    out = tmp_path / "r.json"
    assert main([*SHORT, "--out", str(out)]) == 0
    full = json.loads(out.read_text())
    marked = {**full, "policies": {name: {**s, "marker": name} for name, s in full["policies"].items()}}
    out.write_text(json.dumps(marked))
    assert main([*SHORT, "--out", str(out), "--rerun", "production-stack-prefixaware,duet"]) == 0
    merged = json.loads(out.read_text())
    assert list(merged["policies"]) == list(full["policies"])
    for name, summary in merged["policies"].items():
        if name in ("production-stack-prefixaware", "duet"):
            # replays are deterministic: a rerun gives the full run's figures but the wall time
            assert "marker" not in summary
            assert {**summary, "wall_s": 0} == {**full["policies"][name], "wall_s": 0}
        else:
            assert summary["marker"] == name


def test_rerun_refuses_a_file_another_command_wrote_before_replaying_anything(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main([*SHORT, "--out", str(out)]) == 0
    before = out.read_text()
    assert main([*SHORT, "--seed", "1", "--out", str(out), "--rerun", "duet"]) == 2
    assert "not written by this command" in capsys.readouterr().err
    assert out.read_text() == before
    assert main([*SHORT, "--out", str(out), "--rerun", "no-such-policy"]) == 2
    assert main(["replay", "--duration", "20", "--rerun", "duet"]) == 2
