"""A plan's fleet's utilisation in the gauge's terms: busy replicas over the fleet's."""

import pytest

from gateway.fleet.capacity.headroom import busy_replicas, fleet_utilisation, traffic_demand
from gateway.fleet.capacity.search import Fleet
from gateway.fleet.replay.setup import Cluster, policy_config
from gateway.fleet.workload.traces import Arrival
from gateway.fleet.world.replica_sets import REPLICA_SETS

CONFIG = policy_config(Cluster(REPLICA_SETS["h100-70b-w4a16"], {"standard": 1, "fast": 1}), "duet")


def arrivals(task, count, prompt, output, over_s):
    return [Arrival(i * over_s / count, task, prompt, output) for i in range(count)]


def test_demand_pools_the_seeds_per_task():
    one = arrivals("chat", 100, 1000, 200, 100.0) + arrivals("long-context", 10, 20_000, 300, 100.0)
    two = arrivals("chat", 300, 3000, 200, 100.0)
    demand = traffic_demand([one, two], 100.0)
    assert demand["chat"].rate_per_s == pytest.approx(2.0)
    assert demand["chat"].prompt_tokens == pytest.approx(2500)
    assert demand["long-context"].rate_per_s == pytest.approx(0.05)


def test_utilisation_is_busy_over_replicas_per_variant_present():
    demand = traffic_demand([arrivals("chat", 400, 1000, 200, 100.0) + arrivals("long-context", 20, 20_000, 300, 100.0)],
                            100.0)
    busy = busy_replicas(CONFIG, demand)
    assert busy["fast"] > 0 and busy["standard"] > 0  # parity keeps long documents on standard
    small, large = fleet_utilisation(CONFIG, demand, Fleet(1, 2)), fleet_utilisation(CONFIG, demand, Fleet(2, 4))
    assert small["fast"] == pytest.approx(min(1.0, busy["fast"] / 2), abs=1e-4)
    assert large["standard"] == pytest.approx(small["standard"] / 2, abs=1e-4)
    assert "fast" not in fleet_utilisation(CONFIG, demand, Fleet(3, 0))
