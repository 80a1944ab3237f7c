import pytest

from gateway.domain import Prediction
from gateway.routing.objectives import CheapestWithinBudgetObjective, FastestObjective, FixedOrderObjective
from gateway.routing.plugin import Option

from .factories import FAST, STANDARD, candidate, request


def option(variant, e2e_ms, ttft_ms=50.0):
    return Option(candidate(variant), Prediction(ttft_ms=ttft_ms, e2e_ms=e2e_ms, tpot_ms=10.0), 1.0)


CASES = [
    # (objective, request overrides, options, expected order, reason, meets)
    (CheapestWithinBudgetObjective(margin=1.0), {"latency_budget_ms": 5000}, [option(STANDARD, 3000), option(FAST, 1500)],
     ("fast", "standard"), "cheapest-within-budget", True),
    (CheapestWithinBudgetObjective(margin=1.0), {"latency_budget_ms": 2000}, [option(STANDARD, 1000), option(FAST, 2500)],
     ("standard", "fast"), "cheapest-within-budget", True),
    (CheapestWithinBudgetObjective(margin=1.0), {"latency_budget_ms": 500}, [option(STANDARD, 1000), option(FAST, 800)],
     ("fast", "standard"), "fastest-none-within-budget", False),
    (CheapestWithinBudgetObjective(margin=1.0), {"latency_budget_ms": 500}, [option(STANDARD, 600), option(FAST, 800)],
     ("standard", "fast"), "fastest-none-within-budget", False),
    (CheapestWithinBudgetObjective(margin=1.5), {"latency_budget_ms": 2000}, [option(STANDARD, 1000), option(FAST, 1500)],
     ("standard", "fast"), "cheapest-within-budget", True),
    (CheapestWithinBudgetObjective(margin=1.0), {"ttft_budget_ms": 100}, [option(STANDARD, 900, 50), option(FAST, 400, 150)],
     ("standard", "fast"), "cheapest-within-budget", True),
    (CheapestWithinBudgetObjective(margin=1.0), {}, [option(STANDARD, 100)],
     ("standard",), "only-variant-within-budget", True),
    (FastestObjective(), {}, [option(STANDARD, 1000), option(FAST, 800)], ("fast", "standard"), "fastest", True),
    (FixedOrderObjective(preference=("standard", "fast")), {}, [option(FAST, 100), option(STANDARD, 1000)],
     ("standard", "fast"), "fixed-order", True),
]


@pytest.mark.parametrize(("objective", "overrides", "options", "order", "reason", "meets"), CASES)
def test_objective_orders_variants(objective, overrides, options, order, reason, meets):
    result = objective.order(request(**overrides), options)
    assert result.variants == order
    assert result.reason == reason
    assert result.meets_budget is meets
