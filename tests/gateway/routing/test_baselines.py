from collections import Counter

import pytest

from gateway.domain import Prediction
from gateway.routing.baselines import BestScoreObjective, RoundRobinObjective, request_hash
from gateway.routing.plugin import Option

from .factories import FAST, STANDARD, candidate, request


def option(variant, score=1.0, e2e_ms=1000.0):
    return Option(candidate(variant), Prediction(ttft_ms=50.0, e2e_ms=e2e_ms, tpot_ms=10.0), score)


def rotation_of(req):
    """What the round-robin objective should answer: names sorted, rotated by the hash."""
    names = ["fast", "standard"]
    shift = request_hash(req) % 2
    return tuple(names[shift:] + names[:shift])


ROUND_ROBIN_CASES = [
    # (request overrides, options)
    ({"input_tokens": 100}, [option(STANDARD), option(FAST)]),
    ({"input_tokens": 101}, [option(FAST), option(STANDARD)]),
    ({"input_tokens": 4000, "task": "coding"}, [option(STANDARD, e2e_ms=10), option(FAST, e2e_ms=9000)]),
    ({"expected_output_tokens": 7}, [option(FAST), option(STANDARD)]),
]


@pytest.mark.parametrize(("overrides", "options"), ROUND_ROBIN_CASES)
def test_round_robin_rotates_sorted_variants_by_request_hash(overrides, options):
    req = request(**overrides)
    result = RoundRobinObjective().order(req, options)
    assert result.variants == rotation_of(req)
    assert result.reason == "round-robin"


def test_round_robin_is_stable_for_one_request_and_does_not_depend_on_option_order():
    req = request(input_tokens=1234)
    first = RoundRobinObjective().order(req, [option(STANDARD), option(FAST)])
    second = RoundRobinObjective().order(req, [option(FAST), option(STANDARD)])
    assert first.variants == second.variants


def test_round_robin_splits_varied_requests_about_evenly():
    requests = [request(input_tokens=n, expected_output_tokens=1 + n % 300) for n in range(1, 2001)]
    heads = Counter(RoundRobinObjective().order(r, [option(STANDARD), option(FAST)]).variants[0] for r in requests)
    assert set(heads) == {"standard", "fast"}
    assert 0.4 < heads["fast"] / 2000 < 0.6


def test_round_robin_with_one_variant_keeps_it():
    assert RoundRobinObjective().order(request(), [option(STANDARD)]).variants == ("standard",)


def test_round_robin_reports_whether_head_meets_budget():
    req = request(latency_budget_ms=500)
    result = RoundRobinObjective().order(req, [option(STANDARD, e2e_ms=100), option(FAST, e2e_ms=100)])
    assert result.meets_budget
    result = RoundRobinObjective().order(req, [option(STANDARD, e2e_ms=900), option(FAST, e2e_ms=900)])
    assert not result.meets_budget


BEST_SCORE_CASES = [
    # (options, expected order)
    ([option(STANDARD, 0.2), option(FAST, 0.5)], ("fast", "standard")),
    ([option(STANDARD, 0.9), option(FAST, 0.5)], ("standard", "fast")),
    ([option(STANDARD, 0.5), option(FAST, 0.5)], ("fast", "standard")),  # tie: by name
    ([option(STANDARD, 0.1)], ("standard",)),
]


@pytest.mark.parametrize(("options", "order"), BEST_SCORE_CASES)
def test_best_score_orders_variants_by_best_option_score(options, order):
    result = BestScoreObjective().order(request(), options)
    assert result.variants == order
    assert result.reason == "best-score"


@pytest.mark.parametrize(("options", "expected"), [
    ([option(STANDARD, e2e_ms=10), option(FAST, e2e_ms=9000)], ("fast", "standard")),  # cheaper wins, however slow
    ([option(FAST)], ("fast",)),  # after task-allowed, the cheapest allowed variant
    ([option(STANDARD)], ("standard",)),
])
def test_static_split_orders_variants_by_price_whatever_their_speed(options, expected):
    from gateway.routing.baselines import StaticSplitObjective

    result = StaticSplitObjective().order(request(), options)
    assert result.variants == expected and result.reason == "static-split"
