"""A capacity curve: replicas as a line in the model's busy replicas, rounded up."""

import pytest

from gateway.scaling import CapacityCurve


def test_the_line_is_rounded_up_and_no_demand_asks_for_none():
    curve = CapacityCurve(0.8, 20.0)  # e.g. 2 replicas at 0.05 busy, 4 at 0.15
    assert [curve.replicas(b) for b in (0.0, 0.01, 0.05, 0.0601, 0.15)] == [0, 1, 2, 3, 4]
    assert CapacityCurve(-3.0, 10.0).replicas(0.1) == 0  # never below none


def test_a_line_that_falls_with_the_load_is_refused():
    with pytest.raises(ValueError, match="does not fall with the load"):
        CapacityCurve(1.0, -2.0)
