"""A day of traffic: the curve, its periods, and requests drawn from the held-out window only."""

import pytest

from gateway.fleet.capacity.days.day import DiurnalCurve, day_arrivals, periods
from gateway.fleet.replay.setup import Cluster
from gateway.fleet.replay.windows import DAY_WINDOWS, HELDOUT, TUNING
from gateway.fleet.world.replica_sets import REPLICA_SETS

CLUSTER = Cluster(REPLICA_SETS["h100-70b-w4a16"], {"standard": 1, "fast": 1})


def test_the_curve_runs_from_its_trough_to_its_peak_twelve_hours_later():
    curve = DiurnalCurve(peak_to_trough=4.0, trough_hour=4.0)
    assert curve.at(4.0) == pytest.approx(0.25)
    assert curve.at(16.0) == pytest.approx(1.0)
    assert curve.at(10.0) == pytest.approx(0.625)
    assert curve.mean == pytest.approx(0.625)
    with pytest.raises(ValueError):
        DiurnalCurve(peak_to_trough=0.5)


def test_periods_tile_the_day_at_the_curve_times_the_peak():
    day = periods(DiurnalCurve(), 0.5, period_s=3600.0)
    assert [p.start_s for p in day] == [h * 3600.0 for h in range(24)]
    assert max(p.rate_scale for p in day) == pytest.approx(0.5, rel=0.01)
    assert min(p.rate_scale for p in day) == pytest.approx(0.5 / 3, rel=0.02)


def test_each_period_replays_held_out_requests_at_its_rate():
    day = periods(DiurnalCurve(), 0.5, period_s=600.0, day_s=2 * 3600.0)
    requests = day_arrivals(["code"], CLUSTER, day)
    assert all(requests[i].at_s <= requests[i + 1].at_s for i in range(len(requests) - 1))
    counts = [sum(p.start_s <= a.at_s < p.start_s + p.span_s for a in requests) for p in day]
    assert sum(counts) == len(requests)
    # Azure code runs ~2.57 requests/s at load 1 over its hour (its stretches vary about that).
    expected = [2.57 * p.rate_scale * p.span_s for p in day]
    assert sum(counts) == pytest.approx(sum(expected), rel=0.15)


def test_a_held_out_day_never_reaches_into_the_tuning_window_nor_a_tuning_day_into_the_held_out_one():
    """Every period's stretch starts inside its window and ends before the other's (or the trace's) start."""
    day = periods(DiurnalCurve(), 0.5)
    longest = max(p.span_s * p.rate_scale for p in day)
    assert HELDOUT.start_s >= TUNING.covered(5)[1]
    assert HELDOUT.start_s + HELDOUT.span_s + longest < 3436  # the Azure traces' length: no wrap-around
    assert DAY_WINDOWS["tuning"].start_s + DAY_WINDOWS["tuning"].span_s + longest <= HELDOUT.start_s
