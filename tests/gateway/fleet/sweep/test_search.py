"""The search for the highest load meeting constraints: bracket, bisection, interpolation."""

from __future__ import annotations

import pytest

from gateway.fleet.sweep.knee import crossing
from gateway.fleet.sweep.search import Bracket, Trial, next_load, result


def searched(bracket, share, level):
    """Runs the search against a share function of load; returns its crossing and the loads tried."""
    trials = []
    while (load := next_load(bracket, trials)) is not None:
        trials.append(Trial(load, share(load) >= level, level - share(load)))
    return result(bracket, trials), [t.load for t in trials]


def linear(load):
    return 1.0 - 0.02 * load  # 0.99 at x0.5, 0.95 at x2.5


def test_the_search_brackets_then_bisects_then_interpolates():
    found, tried = searched(Bracket(0.25, 4.0, 3), linear, 0.95)
    assert tried == [0.25, 4.0, 2.125, 3.0625, 2.59375]
    assert found.kind == "exact" and found.value == pytest.approx(2.5)  # exact on a linear share


def test_grid_and_search_agree_on_a_monotone_share():
    loads = [0.35, 0.6, 0.9, 1.2, 1.5, 2.0, 3.0]
    for level in (0.99, 0.95):
        grid = crossing(loads, [linear(x) for x in loads], level)
        found, _ = searched(Bracket(0.35, 3.0, 4), linear, level)
        assert grid.value == pytest.approx(found.value)


def test_a_search_that_never_breaks_or_starts_broken_is_a_bound_after_two_replays():
    found, tried = searched(Bracket(0.5, 2.0), lambda load: 1.0, 0.99)
    assert (found.kind, found.value, tried) == ("at_least", 2.0, [0.5, 2.0])
    found, tried = searched(Bracket(0.5, 2.0), lambda load: 0.5, 0.99)
    assert (found.kind, found.value, tried) == ("below", 0.5, [0.5])


def test_an_infinite_margin_gives_the_last_load_that_held():
    trials = [Trial(1.0, True, -0.1), Trial(2.0, False, float("inf"))]
    assert result(Bracket(1.0, 2.0, 0), trials).value == 1.0


@pytest.mark.parametrize(("low", "high", "steps"), [(0, 1, 2), (2, 1, 2), (1, 2, -1)])
def test_a_bracket_needs_0_lt_low_lt_high(low, high, steps):
    with pytest.raises(ValueError, match="must be 0 < LO < HI"):
        Bracket(low, high, steps)
