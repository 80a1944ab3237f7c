"""The search over replica counts finds the brute-force optimum of small synthetic cases."""

from __future__ import annotations

import itertools
import math

import pytest

from gateway.fleet.capacity.search import Bounds, Fleet, cheapest, smallest


def capacity_share(standard_rps: float, fast_rps: float, load_rps: float):
    """A good share that rises with served capacity and saturates: monotone in both counts."""
    def share(fleet: Fleet) -> float:
        capacity = standard_rps * fleet.standard + fast_rps * fleet.fast
        return 1.0 - math.exp(-capacity / load_rps * 3.0)
    return share


def per_replica(standard_usd: float, fast_usd: float):
    return lambda fleet: standard_usd * fleet.standard + fast_usd * fleet.fast


def brute_force(share, cost, target, bounds):
    fleets = [Fleet(s, f) for s, f in itertools.product(range(bounds.floor, bounds.max_standard + 1),
                                                          range(bounds.max_fast + 1))]
    meeting = [f for f in fleets if share(f) >= target]
    return min(meeting, key=lambda f: (cost(f), -share(f))) if meeting else None


CASES = [  # (standard rps, fast rps, load rps, target, standard $, fast $, bounds)
    (1.0, 1.7, 6.0, 0.99, 12.0, 12.0, Bounds(8, 8)),
    (1.0, 1.7, 6.0, 0.99, 12.0, 12.0, Bounds(8, 8, floor=1)),
    (1.0, 1.7, 6.0, 0.99, 12.0, 6.0, Bounds(8, 8)),      # a fast replica on half the GPUs
    (1.0, 0.6, 6.0, 0.95, 12.0, 6.0, Bounds(10, 10)),     # fast slower but cheaper
    (1.0, 2.5, 9.0, 0.999, 12.0, 12.0, Bounds(12, 12)),
    (1.0, 1.7, 6.0, 0.99, 12.0, 12.0, Bounds(12, 0)),     # standard only
]


@pytest.mark.parametrize("standard_rps, fast_rps, load, target, standard_usd, fast_usd, bounds", CASES)
def test_the_search_finds_the_brute_force_optimum(standard_rps, fast_rps, load, target, standard_usd, fast_usd, bounds):
    share, cost = capacity_share(standard_rps, fast_rps, load), per_replica(standard_usd, fast_usd)
    found = cheapest(share, cost, target, bounds)
    expected = brute_force(share, cost, target, bounds)
    assert found.fleet == expected
    assert found.share == share(expected) and found.cost == cost(expected)
    grid = (bounds.max_standard - bounds.floor + 1) * (bounds.max_fast + 1)
    assert len(found.tried) < grid / 2  # far fewer replays than the grid
    assert len({fleet for fleet, _ in found.tried}) == len(found.tried)  # none twice


def test_the_known_optimum_of_a_table():
    """A hand-made table: 4 replicas meet the target as (1, 3) and (2, 2); (2, 2) has the higher share."""
    table = {(1, 3): 0.991, (2, 2): 0.995, (0, 4): 0.98, (3, 1): 0.985, (4, 0): 0.97}
    def share(fleet: Fleet) -> float:
        if fleet.replicas < 4:
            return 0.5
        return table.get((fleet.standard, fleet.fast), 0.999)
    found = cheapest(share, per_replica(12.0, 12.0), 0.99, Bounds(6, 6))
    assert found.fleet == Fleet(2, 2) and found.share == 0.995


def test_no_fleet_within_the_bounds_meets_the_target():
    found = cheapest(lambda fleet: 0.9, per_replica(12.0, 12.0), 0.99, Bounds(4, 4))
    assert found.fleet is None and found.share == 0.9 and found.tried == ((Fleet(4, 4), 0.9),)


def test_bounds_are_checked():
    with pytest.raises(ValueError, match="bad bounds"):
        Bounds(2, 2, floor=3)
    with pytest.raises(ValueError, match="bad bounds"):
        Bounds(0, 0)


def test_smallest_bisects_a_monotone_predicate():
    calls = []
    def holds(n):
        calls.append(n)
        return n >= 5
    assert smallest(holds, 0, 16) == 5 and len(calls) <= 5
