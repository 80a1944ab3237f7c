"""Goodput at a level: the crossing of one seed's tried loads, its bounds, and estimates and
ratios over seeds."""

from __future__ import annotations

import pytest

from gateway.fleet.sweep.knee import Crossing, estimate, ratio
from gateway.fleet.sweep.knee import crossing as cross


@pytest.mark.parametrize(("loads", "shares", "level", "expected"), [
    # interpolated between the highest passing load and the next one
    ((1, 2, 3), (1.0, 0.99, 0.97), 0.98, Crossing("exact", 2.5)),
    ((1, 2, 3), (1.0, 0.99, 0.97), 0.99, Crossing("exact", 2.0)),  # on the level: it passes
    ((3, 1, 2), (0.97, 1.0, 0.99), 0.98, Crossing("exact", 2.5)),  # unsorted loads
    # never below the level: a lower bound at the highest load, not a number pretending to be exact
    ((1, 2), (1.0, 0.995), 0.99, Crossing("at_least", 2)),
    # below the level at the lowest load: under it
    ((1, 2), (0.9, 0.8), 0.95, Crossing("below", 1)),
    # not monotone: the highest passing load counts, and the crossing says so
    ((1, 2, 3, 4), (1.0, 0.9, 0.99, 0.5), 0.95, Crossing("exact", 3 + 0.04 / 0.49, True)),
    ((1, 2, 3), (0.9, 0.99, 0.995), 0.95, Crossing("at_least", 3, True)),
])
def test_the_crossing_of_tried_loads(loads, shares, level, expected):
    found = cross(loads, shares, level)
    assert found.kind == expected.kind and found.nonmonotone == expected.nonmonotone
    assert found.value == pytest.approx(expected.value)


@pytest.mark.parametrize(("crossings", "kind", "mean", "has_interval"), [
    ([Crossing("exact", 1.0), Crossing("exact", 1.2)], "exact", 1.1, True),
    ([Crossing("exact", 1.0)], "exact", 1.0, False),
    # the mean of lower bounds is a lower bound of the mean, with no interval
    ([Crossing("exact", 1.0), Crossing("at_least", 2.0)], "at_least", 1.5, False),
    ([Crossing("below", 0.35), Crossing("below", 0.35)], "below", 0.35, False),
    ([Crossing("exact", 0.5), Crossing("below", 0.35)], "at_most", 0.425, False),
    ([Crossing("at_least", 2.0), Crossing("below", 0.35)], "undetermined", None, False),
])
def test_an_estimate_over_seeds_is_exact_only_when_every_seed_is(crossings, kind, mean, has_interval):
    found = estimate(crossings)
    assert found.kind == kind and found.seeds == len(crossings)
    assert found.mean == pytest.approx(mean)
    assert (found.ci95 is not None and found.ci95 > 0) == has_interval


@pytest.mark.parametrize(("ours", "theirs", "kind", "value"), [
    (Crossing("exact", 1.5), Crossing("exact", 1.0), "exact", 1.5),
    (Crossing("at_least", 2.0), Crossing("exact", 1.0), "at_least", 2.0),
    (Crossing("exact", 1.0), Crossing("at_least", 2.0), "at_most", 0.5),
    (Crossing("exact", 1.0), Crossing("below", 0.5), "at_least", 2.0),
    (Crossing("at_least", 2.0), Crossing("at_least", 2.0), "undetermined", None),
    (Crossing("below", 0.5), Crossing("below", 0.5), "undetermined", None),
])
def test_a_ratio_of_paired_crossings_is_exact_or_the_bound_that_follows(ours, theirs, kind, value):
    found = ratio(ours, theirs)
    assert found.kind == kind
    assert found.value == pytest.approx(value)


def test_a_crossing_in_req_per_s_keeps_its_kind():
    assert Crossing("at_least", 2.0, True).scaled(3.0) == Crossing("at_least", 6.0, True)
