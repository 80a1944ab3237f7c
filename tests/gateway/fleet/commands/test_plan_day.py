"""``duet plan-day --rescore``: a day's comparators counted again from the plans named, the day
itself untouched, and refused where the plans do not fit it."""

from __future__ import annotations

import json

import pytest

from gateway.cli import main
from tests.gateway.fleet.capacity.days.test_day_goals import FURTHER, STOPPED_SHORT


def _files(tmp_path):
    plan, further, day = tmp_path / "plan.json", tmp_path / "further.json", tmp_path / "day.json"
    plan.write_text(json.dumps({**STOPPED_SHORT, "command": "duet plan --max-replicas 10"}))
    further.write_text(json.dumps(FURTHER))
    days = [{"seed": 0, "autoscaled_usd": 1218.0}]
    day.write_text(json.dumps({"command": f"duet plan-day --plan {plan} --seeds 3 --skip-fixed",
                               "summary": {"autoscaled_usd": 1218.0}, "day_s": 86400.0, "days": days, "against": {}}))
    return plan, further, day


def test_rescore_counts_the_comparator_from_the_plan_searched_further_and_keeps_the_days(tmp_path, capsys):
    plan, further, day = _files(tmp_path)
    assert main(["plan-day", "--plan", str(plan), "--all-standard-plan", str(further), "--rescore", str(day)]) == 0
    rescored = json.loads(day.read_text())
    comparator = rescored["against"]["all_standard_defaults"]
    assert comparator["usd"] == pytest.approx(336.0 * 24) and not comparator["bound"]
    assert comparator["ratio"] == pytest.approx(1218.0 / (336.0 * 24), abs=1e-4)
    assert rescored["against"]["best_baseline"]["ratio"] == pytest.approx(1218.0 / (48.0 * 24), abs=1e-4)
    assert rescored["days"] == [{"seed": 0, "autoscaled_usd": 1218.0}]
    assert rescored["command"] == f"duet plan-day --plan {plan} --seeds 3 --skip-fixed --all-standard-plan {further}"
    assert "against all_standard_defaults" in capsys.readouterr().out
    # counted again, the same: the command names the plan once
    assert main(["plan-day", "--plan", str(plan), "--all-standard-plan", str(further), "--rescore", str(day)]) == 0
    assert json.loads(day.read_text())["command"].count("--all-standard-plan") == 1


def test_rescore_refuses_a_day_made_from_another_plan_and_a_plan_on_other_traffic(tmp_path, capsys):
    plan, further, day = _files(tmp_path)
    other = tmp_path / "other.json"
    other.write_text(plan.read_text())
    assert main(["plan-day", "--plan", str(other), "--rescore", str(day)]) == 2
    assert "was not made from --plan" in capsys.readouterr().err
    further.write_text(json.dumps({**FURTHER, "rate_scale": 1.0}))
    before = day.read_text()
    assert main(["plan-day", "--plan", str(plan), "--all-standard-plan", str(further), "--rescore", str(day)]) == 2
    assert "rate_scale" in capsys.readouterr().err and day.read_text() == before
