"""llm-d's default scheduler scoring: queue depth min-max normalised over the pool, KV-cache
utilisation, and the router picking the highest weighted total over both variants' replicas."""

from __future__ import annotations

import pytest

from gateway.routing.baselines import BestScoreObjective
from gateway.routing.filters import HealthyFilter
from gateway.routing.llmd import LlmdKvCacheUtilizationScorer, LlmdQueueScorer
from gateway.routing.predictors import QueueAwareLatencyPredictor
from gateway.routing.router import RoutingProfile, WeightedScorer, route

from .factories import FAST, STANDARD, candidate, request


@pytest.mark.parametrize(("waiting", "expected"), [
    ([0, 5, 10], [1.0, 0.5, 0.0]),
    ([3, 3], [1.0, 1.0]),  # all alike: neutral
    ([None, 4], [1.0, 0.0]),  # unknown counts as none waiting
    ([7], [1.0]),
])
def test_queue_scorer_normalises_waiting_between_the_pools_fewest_and_most(waiting, expected):
    candidates = [candidate(STANDARD, i, waiting=w) for i, w in enumerate(waiting)]
    assert LlmdQueueScorer().score_pool(request(), candidates) == expected


@pytest.mark.parametrize(("usage", "expected"), [(None, 1.0), (0.0, 1.0), (0.25, 0.75), (1.0, 0.0)])
def test_kv_cache_utilization_scorer_is_the_free_fraction(usage, expected):
    c = candidate(STANDARD, kv_cache_usage=usage)
    assert LlmdKvCacheUtilizationScorer().score(request(), c, None) == pytest.approx(expected)


PROFILE = RoutingProfile(
    "llm-d-default", (HealthyFilter(),), QueueAwareLatencyPredictor(),
    (WeightedScorer(LlmdQueueScorer(), 2.0), WeightedScorer(LlmdKvCacheUtilizationScorer(), 2.0)),
    BestScoreObjective(),
)


@pytest.mark.parametrize(("states", "winner"), [
    # (standard's, fast's): queue first, then KV space; the queue is normalised across both variants
    (({"waiting": 0, "kv_cache_usage": 0.5}, {"waiting": 2, "kv_cache_usage": 0.1}), "m/standard/0"),
    (({"waiting": 1, "kv_cache_usage": 0.5}, {"waiting": 1, "kv_cache_usage": 0.1}), "m/fast/0"),
    # with two replicas the normalised queue is 1 or 0: an emptier queue outweighs a fuller cache
    (({"waiting": 0, "kv_cache_usage": 0.9}, {"waiting": 1, "kv_cache_usage": 0.0}), "m/standard/0"),
])
def test_the_highest_weighted_total_over_every_replica_wins(states, winner):
    standard, fast = states
    decision = route(request(), [candidate(STANDARD, **standard), candidate(FAST, **fast)], PROFILE)
    assert decision.ranked[0].id == winner
