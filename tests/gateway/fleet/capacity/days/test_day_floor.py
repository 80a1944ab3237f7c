"""A schedule floor learned from tuning days only: per period the median of their plans, less a
margin, asked for a start-up and a scale-up window ahead."""

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from gateway.fleet.capacity.days import day_floor
from gateway.fleet.capacity.days.daily import DaySpec
from gateway.fleet.capacity.days.day import DiurnalCurve

SPEC = DaySpec("h100-70b-w4a16", "code,conv", 0.5, 0.99, "duet", {"standard": 6, "fast": 0}, {},
               DiurnalCurve(), period_s=3600.0, day_s=4 * 3600.0, seed=7, startup_s=346.0, scale_up_s=300.0,
               window="heldout")
PLANS = {1: [2, 3, 5, 4], 2: [2, 4, 6, 4], 3: [3, 3, 4, 2]}  # history day -> standard per period


@pytest.fixture
def history(monkeypatch):
    seen = []

    def fake_seed_day(spec, index):
        seen.append((spec.window, spec.seed + index, dict(spec.schedule)))
        return SimpleNamespace(plan=[{"standard": n, "fast": 0} for n in PLANS[index]])

    monkeypatch.setattr(day_floor, "seed_day", fake_seed_day)
    return seen


def test_history_is_the_tuning_windows_days_after_the_seed_never_the_scored_window(history):
    assert day_floor.history_counts(SPEC, 3) == {"standard": [2, 3, 5, 4], "fast": [0, 0, 0, 0]}
    assert [(window, seed) for window, seed, _ in history] == [("tuning", 8), ("tuning", 9), ("tuning", 10)]
    assert all(schedule == {} for _, _, schedule in history)  # the plans are the reactive gauge's


def test_a_margin_leaves_replicas_to_the_reactive_part_and_never_goes_below_none(history):
    assert day_floor.history_counts(SPEC, 3, margin=3)["standard"] == [0, 0, 2, 1]


def test_each_count_is_asked_for_a_start_up_and_a_scale_up_window_ahead_in_whole_minutes(history):
    assert day_floor.lead_of(SPEC) == 660.0  # 346 + 300 s, rounded up to 11 minutes
    (standard,) = day_floor.learned_floor(SPEC, 3).values()  # fast asks for none: no schedule
    for period, serving in enumerate([2, 3, 5, 4]):
        assert standard.at(period * 3600.0) == serving
        assert standard.at(period * 3600.0 - 661.0) != serving or period == 0


def test_the_results_say_where_the_floor_came_from_and_what_it_holds(history):
    spec = dataclasses.replace(SPEC, schedule=day_floor.learned_floor(SPEC, 3))
    recorded = day_floor.floor_json(spec, 3)
    assert "seeds 8..10" in recorded["history"] and recorded["lead_s"] == 660.0
    # A 24-hour schedule of the 4-period day: its last count (4) holds from 02:49 to 00:00 the next day.
    assert recorded["replica_hours"]["standard"] == pytest.approx((2 * 3600 + 3 * 3600 + 5 * 3600 + 4 * (86400 - 3 * 3600)
                                                                   ) / 3600, abs=0.01)


def test_the_floor_is_written_as_duet_yamls_schedule_and_reads_back_the_same():
    from gateway.config import parse_config
    from gateway.scaling import FloorSchedule, ScheduleStep

    schedule = {"standard": FloorSchedule((ScheduleStep(1140.0, 2), ScheduleStep(30845.0, 4)))}
    written = day_floor.as_config(schedule)
    assert written == {"standard": [{"at": "00:19", "replicas": 2}, {"at": "08:34:05", "replicas": 4}]}
    raw = yaml.safe_load((Path(__file__).resolve().parents[5] / "deploy" / "config" / "demo.yaml").read_text())
    raw["models"]["smollm2"]["autoscaling"] = {"schedule_by_variant": written}
    read = parse_config(yaml.safe_dump(raw)).models["smollm2"].autoscaling
    assert read is not None and dict(read.schedule_by_variant) == schedule
