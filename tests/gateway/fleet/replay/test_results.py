"""The held-out replay section's verdicts and the results files `duet replay --out` writes."""

from __future__ import annotations

import json

from gateway.fleet.replay.results import verdict


def policy(good, cost):
    return {"good_fraction": good, "cost_usd": cost}


def test_the_verdict_needs_more_good_requests_at_equal_or_lower_cost():
    beats = verdict({"duet": policy(0.99, 6.5), "least-loaded": policy(0.98, 7.2), "always-fast": policy(0.97, 6.4)})
    assert beats.count("**beats it at equal or lower cost**") == 2 and "best other policy (least-loaded)" in beats
    dearer = verdict({"duet": policy(0.99, 7.5), "least-loaded": policy(0.98, 7.2)})
    assert dearer.count("**does not beat it") == 2
    fewer = verdict({"duet": policy(0.97, 6.5), "least-loaded": policy(0.98, 7.2)})
    assert "(-1.00 points)" in fewer and "**does not beat it" in fewer


def test_replay_out_writes_the_json_with_the_command_that_reruns_it(tmp_path, capsys):
    from gateway.cli import main

    out = tmp_path / "r.json"
    assert main(["replay", "--duration", "20", "--rate-scale", "0.2", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["command"] == ("duet replay --trace code,conv --replicas h100-70b:standard=1,fast=3 --policy duet "
                                 "--rate-scale 0.2 --duration 20 --start 0 --seed 0 --prior-error 0.3")
    assert result["output_length"].startswith("learned") and set(result["prior_error"]) == {"standard", "fast"}
    assert result["parity"]["fast"] == ["agent", "chat", "coding", "extraction"]
    assert {"good_fraction", "quality_misses", "ttft_ms", "tpot_ms"} <= set(result["policies"]["duet"])


def test_the_goal_needs_two_points_over_the_best_other_policy_at_equal_or_lower_cost():
    from gateway.fleet.replay.results import summary

    def result(duet, best):
        return {"policies": {"duet": duet, "least-loaded": policy(0.95, 7.0), "always-fast": best}}

    rows = summary([
        ("a", "", result(policy(0.99, 6.0), policy(0.97, 6.0))),  # +2 points, same cost: met
        ("b", "", result(policy(0.99, 6.1), policy(0.97, 6.0))),  # dearer
        ("c", "", result(policy(0.985, 5.0), policy(0.97, 6.0))),  # +1.5 points only
    ])
    assert [row.rsplit("|", 2)[1].strip() for row in rows[2:]] == ["met", "not met", "not met"]
    assert "| always-fast |" in rows[2] and "+2.00" in rows[2]
    assert "Goal (at least +2 points" in verdict(result(policy(0.99, 6.0), policy(0.97, 6.0))["policies"])


def test_several_seeds_show_their_intervals():
    from gateway.fleet.replay.results import good_cell

    assert good_cell({"good_fraction": 0.9912, "good_fraction_ci95": 0.0021}) == "99.12% ± 0.21%"
    assert good_cell({"good_fraction": 0.9912}) == "99.12%"
