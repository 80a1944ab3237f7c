"""The gauge's readings against a curve point's x: every scrape of the day, and per period the
whole traffic's busy replicas beside the readings' spread, each with the curve's count."""

import dataclasses

from gateway.autoscaling import CapacityCurve
from gateway.fleet.capacity.days.daily import DaySpec, seed_day
from gateway.fleet.capacity.days.day import DiurnalCurve
from gateway.fleet.capacity.days.day_readings import readings, spread

SPEC = DaySpec("h100-70b-w4a16", "code,conv", 0.5, 0.99, "duet", {"standard": 6, "fast": 0}, {},
               DiurnalCurve(), period_s=300.0, day_s=900.0, seeds=1,
               capacity={"standard": CapacityCurve(-0.5, 9.0), "fast": CapacityCurve(-0.5, 0.0)})


def test_one_reading_a_scrape_and_a_line_per_period_shown():
    day = seed_day(SPEC, 0)
    taken = readings(SPEC, day)
    assert [at for at, _ in taken] == [15.0 * k for k in range(1, 61)]
    assert all(busy >= 0 for _, busy in taken) and max(busy for _, busy in taken) > 0
    lines = spread(dataclasses.replace(SPEC), day, "standard", every=1)
    assert len(lines) == 1 + 3 and lines[1].strip().startswith("0.0h")
    assert lines[1].count("->") == 4  # the period's whole traffic, then median, p90 and max
