"""vLLM production-stack's prefix-aware router: the replicas holding the longest cached prefix,
one of them at random (any replica when none holds any), whatever their queues."""

from __future__ import annotations

import dataclasses
from collections import Counter

from gateway.routing.baselines import BestScoreObjective
from gateway.routing.filters import HealthyFilter
from gateway.routing.predictors import QueueAwareLatencyPredictor
from gateway.routing.production_stack import ProductionStackPrefixScorer
from gateway.routing.router import RoutingProfile, WeightedScorer, route

from .factories import FAST, STANDARD, candidate, request

PROFILE = RoutingProfile("production-stack-prefixaware", (HealthyFilter(),), QueueAwareLatencyPredictor(),
                         (WeightedScorer(ProductionStackPrefixScorer(), 1.0),), BestScoreObjective())


def cached(c, tokens):
    return dataclasses.replace(c, cached_tokens=tokens)


def test_only_the_longest_matches_score_and_they_score_at_least_half():
    pool = [cached(candidate(FAST, 0), 512), cached(candidate(FAST, 1), 256), cached(candidate(STANDARD, 0), 512)]
    scores = ProductionStackPrefixScorer().score_pool(request(input_tokens=1000), pool)
    assert scores[1] == 0.0
    assert 0.5 <= scores[0] < 1.0 and 0.5 <= scores[2] < 1.0


def test_the_longest_match_wins_even_on_a_long_queue():
    pool = [cached(candidate(FAST, 0, waiting=40), 768), candidate(FAST, 1), candidate(STANDARD, 0)]
    for tokens in range(100, 140):
        assert route(request(input_tokens=tokens), pool, PROFILE).ranked[0].id == "m/fast/0"


def test_without_a_match_the_pick_spreads_evenly_over_every_replica_of_every_variant():
    pool = [candidate(STANDARD, 0), *(candidate(FAST, i) for i in range(3))]
    picks = Counter(route(request(input_tokens=n), pool, PROFILE).ranked[0].id for n in range(1, 2001))
    assert set(picks) == {"m/standard/0", "m/fast/0", "m/fast/1", "m/fast/2"}
    assert all(400 <= count <= 600 for count in picks.values()), picks


def test_ties_among_the_longest_matches_are_broken_at_random_but_the_same_for_one_request():
    pool = [cached(candidate(FAST, i), 512) for i in range(2)] + [candidate(STANDARD, 0)]
    picks = Counter(route(request(input_tokens=n), pool, PROFILE).ranked[0].id for n in range(1, 1001))
    assert set(picks) == {"m/fast/0", "m/fast/1"} and min(picks.values()) >= 400
    one = request(input_tokens=321)
    assert len({route(one, pool, PROFILE).ranked[0].id for _ in range(5)}) == 1
