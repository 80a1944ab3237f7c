"""The replica gauges: the prefix-cache hit rate shows for replicas that report one."""

from __future__ import annotations

from gateway.domain import Health, Replica, ReplicaState
from gateway.telemetry import Telemetry


def test_the_prefix_cache_hit_rate_is_a_gauge_per_replica():
    replicas = (Replica("m/std/0", "m", "std", "http://127.0.0.1:1"), Replica("m/fast/0", "m", "fast", "http://127.0.0.1:2"))
    states = {"m/std/0": ReplicaState("m/std/0", health=Health.UP, prefix_cache_hit_rate=0.625)}
    telemetry = Telemetry()
    telemetry.watch_replicas(lambda: replicas, lambda: states)
    text = telemetry.render().decode()
    assert 'duet_replica_prefix_cache_hit_rate{model="m",replica="m/std/0",variant="std"} 0.625' in text
    assert 'duet_replica_prefix_cache_hit_rate{model="m",replica="m/fast/0"' not in text  # unknown: no sample
