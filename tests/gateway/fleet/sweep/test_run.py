"""Real sweeps, kept tiny: a grid and a search agree where the share falls monotonically, worker
processes change no result, and the results file says what ran."""

from __future__ import annotations

import json

from gateway.cli import main
from gateway.fleet.replay.windows import Window
from gateway.fleet.sweep.run import SweepSpec, Task, grid_crossing, run_tasks
from gateway.fleet.sweep.search import Bracket, bracket_of, result
from gateway.fleet.sweep.sla import good_share_at_least

SPEC = SweepSpec("code,conv", "h100-70b:standard=1,fast=1", ("least-loaded",), Window("test", 0.0, 60.0), 1)


def test_grid_and_search_agree_on_a_monotone_share():
    grid, searched = run_tasks([
        Task(SPEC, "least-loaded", 0, (1.0, 2.0, 4.0, 8.0)),
        Task(SPEC, "least-loaded", 0, (), Bracket(1.0, 8.0, 3), (good_share_at_least(0.95),)),
    ])
    for points in (grid.points, searched.points):  # each falls with load: the case is monotone
        shares = [p.good_fraction for p in sorted(points, key=lambda p: p.load)]
        assert shares == sorted(shares, reverse=True)
    on_grid = grid_crossing(grid.points, 0.95)
    by_search = result(Bracket(1.0, 8.0, 3), searched.searches[0])
    assert on_grid.kind == by_search.kind == "exact"
    low, high = bracket_of(searched.searches[0])
    assert low <= on_grid.value <= high
    assert 1.0 <= by_search.value <= 2.0  # inside the grid's bracket
    assert len(searched.points) == 5  # two ends and three bisection steps, one replay each


SWEEP = ["replay", "--replicas", "h100-70b:standard=1,fast=1", "--policies", "least-loaded,duet", "--duration", "40",
         "--seeds", "2", "--sweep", "1,4", "--json"]


def test_two_workers_give_what_one_gives_and_the_file_says_what_ran(tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main([*SWEEP, "--out", str(one)]) == 0
    assert main([*SWEEP, "--jobs", "2", "--out", str(two)]) == 0
    assert one.read_text() == two.read_text()
    written = json.loads(one.read_text())
    assert written["command"] == ("duet replay --trace code,conv --replicas h100-70b:standard=1,fast=1 --policies "
                                  "least-loaded,duet --sweep 1,4 --start 0 --duration 40 --shift 60 --seeds 2 --seed 0 "
                                  "--prior-error 0.3")
    assert written["window"]["covered_s"] == [0.0, 100.0]
    assert [(r["start_s"], r["end_s"]) for r in written["window"]["runs"]] == [(0.0, 40.0), (60.0, 100.0)]
    assert written["loads"] == [1.0, 4.0] and list(written["grid"]) == ["least-loaded", "duet"]
    assert [c["constraint"] for c in written["crossings"]] == ["good_fraction>=0.99", "good_fraction>=0.95"]
    at_99, at_95 = written["crossings"]
    assert at_99["comparison"] is None  # least-loaded's seeds cross below x1 and above x4: nothing to compare
    assert at_95["comparison"]["best_baseline"] == "least-loaded"
    assert at_95["policies"]["least-loaded"]["load"]["kind"] == "at_least"  # one seed never fell below 95%


def test_a_named_window_refuses_its_own_settings_and_a_bad_sla_names_its_key(tmp_path, capsys):
    assert main(["replay", "--window", "tuning", "--start", "100", "--sweep", "1,2"]) == 2
    assert "--window tuning sets its own" in capsys.readouterr().err
    sla = tmp_path / "sla.json"
    sla.write_text(json.dumps({"p99_itl_ms": "<=50"}))
    assert main(["replay", "--sweep-search", "1:2", "--sla", str(sla)]) == 2
    assert f"{sla}.p99_itl_ms: the replay keeps no per-token times" in capsys.readouterr().err
    assert main(["replay", "--sweep", "1"]) == 2
    assert main(["replay", "--sweep-search", "2:1"]) == 2


def test_rerunning_some_policies_into_the_file_leaves_it_as_a_full_sweep_wrote_it(tmp_path):
    """Replays are deterministic: replaying one policy again and merging it into the file gives the
    file the whole sweep wrote (comparisons redone); a file another sweep wrote is refused."""
    full, partial = tmp_path / "full.json", tmp_path / "partial.json"
    assert main([*SWEEP, "--out", str(full)]) == 0
    partial.write_text(full.read_text())
    written = json.loads(partial.read_text())
    written["grid"]["duet"][0]["good_fraction"] = 0.0  # what the rerun must put back
    partial.write_text(json.dumps(written))
    assert main([*SWEEP, "--rerun", "duet", "--out", str(partial)]) == 0
    assert json.loads(partial.read_text()) == json.loads(full.read_text())
    assert main([*SWEEP[:-3], "--sweep", "1,3", "--json", "--rerun", "duet", "--out", str(partial)]) == 2
    assert main([*SWEEP, "--rerun", "round-robin", "--out", str(partial)]) == 2
