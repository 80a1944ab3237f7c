"""The capacity curve's fit: a line per variant through (busy, replicas - 0.5), and a plan's spec and
layout read back from its results file."""

from __future__ import annotations

import pytest

from gateway.fleet.capacity.curve import CurvePoint, curves_of, fit_line, layout_of, spec_of
from gateway.fleet.capacity.layout import Deployment, Layout
from gateway.fleet.capacity.roles import SPLIT
from gateway.fleet.capacity.search import Fleet


def test_a_line_through_the_midpoints_gives_back_each_points_count_rounded_up():
    points = [CurvePoint(0.17, Fleet(0, 2), 0.995, 0.05), CurvePoint(0.25, Fleet(0, 3), 0.993, 0.075),
              CurvePoint(0.5, Fleet(1, 4), 0.992, 0.15)]
    curves = curves_of(points, ["standard", "fast"])
    assert [curves["fast"].replicas(p.busy) for p in points] == [2, 3, 4]
    assert curves["standard"].replicas(0.15) == 1 and curves["standard"].replicas(0.05) == 0
    # less than a third of the peak's load asks for fewer replicas than the peak's utilisation would
    assert curves["fast"].replicas(0.03) <= 2


def test_a_point_without_a_fleet_is_left_out_and_one_point_gives_a_line_through_the_origin():
    curves = curves_of([CurvePoint(0.5, Fleet(0, 4), 0.99, 0.1), CurvePoint(0.2, None, 0.9, 0.04)], ["fast"])
    assert curves["fast"].intercept == 0 and curves["fast"].per_busy_replica == pytest.approx(35.0)
    assert fit_line([(0.1, 2.0), (0.2, 1.0)]).per_busy_replica == 0  # never a line that falls with the load


def test_a_plans_spec_and_chosen_layout_are_read_back_from_its_results():
    window = {"name": "tuning", "start_s": 0.0, "span_s": 300.0, "shift_s": 60.0, "seeds": 3}
    results = {"trace": "code,conv", "replica_set": "h100-70b", "target": 0.99, "rate_scale": 0.5, "search": window,
               "check": {**window, "name": "heldout", "start_s": 1500.0}, "max_replicas": 10, "seed": 0,
               "prior_error": 0.3, "length_quantile": 0.5}
    spec = spec_of(results)
    assert (spec.search.span_s, spec.search_seeds, spec.check.start_s, spec.rate_scale) == (300.0, 3, 1500.0, 0.5)
    plan = {"layout": {"standard": {"tp": 4, "chunk": None}, "fast": {"tp": 2, "chunk": 16384}}, "roles": "split"}
    assert layout_of(plan) == Layout(Deployment(4), Deployment(2, 16384), SPLIT)
    assert layout_of({"layout": {"standard": {"tp": 8, "chunk": None}}}) == Layout(Deployment(8), None)
    assert layout_of({}) is None
