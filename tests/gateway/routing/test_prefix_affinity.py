"""The prefix-affinity scorer, llm-d's prefix-cache scorer, and how a cached prefix moves the
predictors and the objective: a warm replica prefills only the uncached part of the prompt."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.routing.baselines import BestScoreObjective
from gateway.routing.filters import HealthyFilter
from gateway.routing.llmd import LlmdKvCacheUtilizationScorer, LlmdPrefixCacheScorer, LlmdQueueScorer
from gateway.routing.objectives import CheapestWithinBudgetObjective
from gateway.routing.predictors import QueueAwareLatencyPredictor, StepModelPredictor, prefill_ms, uncached_tokens
from gateway.routing.prefix_affinity import PrefixAffinityScorer
from gateway.routing.router import RoutingProfile, WeightedScorer, route

from .factories import FAST, STANDARD, candidate, request


def cached(c, tokens):
    return dataclasses.replace(c, cached_tokens=tokens)


@pytest.mark.parametrize(("input_tokens", "cached_tokens", "min_tokens", "expected"), [
    (1000, 0, 0, 0.0),
    (1000, 500, 0, 0.5),
    (1000, 1000, 0, 1.0),
    (1000, 1200, 0, 1.0),  # the index's blocks may overshoot an approximate count: capped
    (1000, 100, 128, 0.0),  # below the floor: a shared system prompt alone does not pull
    (1000, 128, 128, 0.128),
    (0, 64, 0, 0.0),
])
def test_prefix_affinity_is_the_cached_fraction_above_a_floor(input_tokens, cached_tokens, min_tokens, expected):
    c = cached(candidate(STANDARD), cached_tokens)
    score = PrefixAffinityScorer(min_tokens=min_tokens).score(request(input_tokens=input_tokens), c, None)
    assert score == pytest.approx(expected)


@pytest.mark.parametrize(("input_tokens", "cached_tokens", "expected"), [
    (1000, 0, 0.0), (1000, 640, 0.64), (1000, 1000, 1.0), (1000, 4096, 1.0), (0, 0, 0.0),
])
def test_llmd_prefix_cache_scorer_is_matched_over_total(input_tokens, cached_tokens, expected):
    c = cached(candidate(FAST), cached_tokens)
    assert LlmdPrefixCacheScorer().score(request(input_tokens=input_tokens), c, None) == pytest.approx(expected)


@pytest.mark.parametrize(("input_tokens", "cached_tokens", "uncached"), [
    (1000, 0, 1000), (1000, 640, 360), (1000, 1000, 1), (1000, 5000, 1), (0, 0, 0),
])
def test_only_the_uncached_prompt_is_prefilled_and_never_less_than_its_last_token(input_tokens, cached_tokens, uncached):
    c = cached(candidate(STANDARD), cached_tokens)
    assert uncached_tokens(request(input_tokens=input_tokens), c) == uncached
    assert prefill_ms(request(input_tokens=input_tokens), STANDARD, cached_tokens) == pytest.approx(
        uncached / STANDARD.speed.prefill_tokens_per_s * 1e3)


@pytest.mark.parametrize("predictor", [StepModelPredictor(), QueueAwareLatencyPredictor()])
def test_a_warm_replica_is_predicted_to_start_sooner_by_the_prefill_it_skips(predictor):
    profile = request(input_tokens=4000)
    cold = predictor.predict(profile, candidate(STANDARD))
    warm = predictor.predict(profile, cached(candidate(STANDARD), 3000))
    saved_ms = 3000 / STANDARD.speed.prefill_tokens_per_s * 1e3
    assert cold.ttft_ms - warm.ttft_ms == pytest.approx(saved_ms, rel=0.05)


SLOW_FAST = dataclasses.replace(FAST, speed=dataclasses.replace(FAST.speed, prefill_tokens_per_s=2000.0))
SLOW_STANDARD = dataclasses.replace(STANDARD, speed=dataclasses.replace(STANDARD.speed, prefill_tokens_per_s=2000.0))
CHEAPEST = RoutingProfile("duet", (HealthyFilter(),), StepModelPredictor(),
                          (WeightedScorer(PrefixAffinityScorer(), 1.0),), CheapestWithinBudgetObjective())


@pytest.mark.parametrize(("standard_cached", "fast_cached", "variant"), [
    (0, 0, "standard"),  # both cold: fast's slower prefill (2000 tok/s vs 5000) misses the budget
    (0, 3584, "fast"),  # fast warm: fits, and it is cheaper
    (3584, 0, "standard"),  # standard warm, fast cold: the warm standard wins
])
def test_the_objective_compares_variants_with_their_cache_state(standard_cached, fast_cached, variant):
    profile = request(input_tokens=4000, expected_output_tokens=16, ttft_budget_ms=1200)
    options = [cached(candidate(STANDARD), standard_cached), cached(candidate(SLOW_FAST), fast_cached)]
    assert route(profile, options, CHEAPEST).variant == variant


def test_within_a_variant_the_replica_holding_the_prompt_ranks_first():
    profile = request(input_tokens=2000)
    options = [candidate(SLOW_STANDARD, 0), cached(candidate(SLOW_STANDARD, 1), 1536), candidate(SLOW_STANDARD, 2)]
    assert route(profile, options, CHEAPEST).ranked[0].id == "m/standard/1"


LLMD = RoutingProfile(
    "llm-d-default", (HealthyFilter(),), QueueAwareLatencyPredictor(),
    (WeightedScorer(LlmdQueueScorer(), 2.0), WeightedScorer(LlmdKvCacheUtilizationScorer(), 2.0),
     WeightedScorer(LlmdPrefixCacheScorer(), 3.0)),
    BestScoreObjective(),
)


@pytest.mark.parametrize(("states", "cache", "winner"), [
    # equal load: the replica holding the prompt wins whatever its variant
    (({}, {}), (0, 2000), "m/fast/0"),
    (({}, {}), (2000, 0), "m/standard/0"),
    # a whole cached prompt (3) outweighs the longer queue (2) and a quarter-full KV cache (0.5)...
    (({"waiting": 3, "kv_cache_usage": 0.25}, {"waiting": 0}), (2000, 0), "m/standard/0"),
    # ...a quarter of it (0.75) does not
    (({"waiting": 3, "kv_cache_usage": 0.25}, {"waiting": 0}), (500, 0), "m/fast/0"),
])
def test_llmd_default_weighs_prefix_against_load_with_its_default_weights(states, cache, winner):
    standard, fast = states
    options = [cached(candidate(STANDARD, **standard), cache[0]), cached(candidate(FAST, **fast), cache[1])]
    assert route(request(input_tokens=2000), options, LLMD).ranked[0].id == winner
