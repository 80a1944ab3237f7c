import pytest

from gateway.domain import Prediction
from gateway.routing.objectives import (
    CheapestWithinBudgetObjective,
    FastestObjective,
    FixedOrderObjective,
    MostHeadroomObjective,
)
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


def test_a_short_answer_leaves_a_replica_in_a_prefill_burst_for_a_variant_that_fits():
    """Fast's mean TPOT fits, but the prompts queued and arriving there would stall its five decode
    steps past the budget; the quiet standard replica fits, so it goes first despite its price."""
    prediction = Prediction(ttft_ms=200.0, e2e_ms=300.0, tpot_ms=20.0)
    fast = Option(candidate(FAST, prefill_backlog_tokens=4000, prefill_tokens_per_s=5000.0), prediction, 1.0)
    standard = Option(candidate(STANDARD), prediction, 1.0)
    short = request(task="coding", expected_output_tokens=6, tpot_budget_ms=50.0)
    aware = CheapestWithinBudgetObjective(margin=1.0, interference_weight=1.0)
    assert aware.order(short, [fast, standard]).variants == ("standard", "fast")
    assert CheapestWithinBudgetObjective(margin=1.0).order(short, [fast, standard]).variants == ("fast", "standard")
    # A long answer amortises the same stall: the cheaper variant still fits.
    long = request(task="chat", expected_output_tokens=256, tpot_budget_ms=50.0)
    assert aware.order(long, [fast, standard]).variants == ("fast", "standard")


def test_interference_is_ignored_without_a_tpot_budget():
    prediction = Prediction(ttft_ms=200.0, e2e_ms=300.0, tpot_ms=20.0)
    fast = Option(candidate(FAST, prefill_backlog_tokens=40000), prediction, 1.0)
    standard = Option(candidate(STANDARD), prediction, 1.0)
    order = CheapestWithinBudgetObjective(interference_weight=1.0).order(request(expected_output_tokens=6), [fast, standard])
    assert order.variants == ("fast", "standard")


def test_protecting_decodes_sends_a_prompt_where_it_stalls_no_short_answer_past_its_budget():
    """A 2,500-token prompt takes 500 ms to prefill; a short answer on the fast replica has 100 ms of
    slack left. With protect_decodes the prompt goes to standard, which fits and harms nobody;
    without it, to the cheaper fast variant."""
    prediction = Prediction(ttft_ms=600.0, e2e_ms=900.0, tpot_ms=10.0)
    fast = Option(candidate(FAST, decode_slack_ms=100.0), prediction, 1.0)
    standard = Option(candidate(STANDARD), prediction, 1.0)
    big = request(input_tokens=2500, latency_budget_ms=2000)
    assert CheapestWithinBudgetObjective(margin=1.0, protect_decodes=True).order(big, [fast, standard]).variants == (
        "standard", "fast")
    assert CheapestWithinBudgetObjective(margin=1.0).order(big, [fast, standard]).variants == ("fast", "standard")
    # A small prompt's prefill fits in that slack: the cheaper variant again.
    small = request(input_tokens=100, latency_budget_ms=2000)
    assert CheapestWithinBudgetObjective(margin=1.0, protect_decodes=True).order(small, [fast, standard]).variants == (
        "fast", "standard")


def test_when_no_variant_meets_the_budget_the_one_that_harms_nobody_goes_first():
    """The request misses wherever it goes; it should not also push a short answer past its budget,
    even where it would be fastest."""
    fast = Option(candidate(FAST, decode_slack_ms=100.0), Prediction(ttft_ms=600.0, e2e_ms=900.0, tpot_ms=10.0), 1.0)
    standard = Option(candidate(STANDARD), Prediction(ttft_ms=800.0, e2e_ms=1200.0, tpot_ms=10.0), 1.0)
    tight = request(input_tokens=2500, latency_budget_ms=500)
    order = CheapestWithinBudgetObjective(margin=1.0, protect_decodes=True).order(tight, [fast, standard])
    assert (order.variants, order.reason) == (("standard", "fast"), "fastest-none-within-budget")
    assert CheapestWithinBudgetObjective(margin=1.0).order(tight, [fast, standard]).variants == ("fast", "standard")


def test_on_a_fixed_fleet_the_variant_with_the_most_room_goes_first_even_if_it_costs_more():
    """Both fit; standard is idle and has more room: a fixed fleet pays for it anyway."""
    fast = option(FAST, 1500, ttft_ms=400.0)
    standard = option(STANDARD, 1000, ttft_ms=100.0)
    order = MostHeadroomObjective().order(request(latency_budget_ms=2000, ttft_budget_ms=500), [fast, standard])
    assert (order.variants, order.reason, order.meets_budget) == (("standard", "fast"), "most-headroom", True)


def test_cost_breaks_ties_between_variants_with_equal_room():
    fast, standard = option(FAST, 1000), option(STANDARD, 1000)
    assert MostHeadroomObjective().order(request(latency_budget_ms=2000), [standard, fast]).variants == ("fast", "standard")
    # Within ``tie`` of the lowest risk, the cheaper variant goes first.
    roomier_standard = option(STANDARD, 900)
    assert MostHeadroomObjective(tie=0.1).order(request(latency_budget_ms=2000), [roomier_standard, fast]).variants == (
        "fast", "standard")
    assert MostHeadroomObjective().order(request(latency_budget_ms=2000), [roomier_standard, fast]).variants == (
        "standard", "fast")


def test_the_stall_other_prompts_add_counts_against_a_short_answer():
    prediction = Prediction(ttft_ms=200.0, e2e_ms=300.0, tpot_ms=20.0)
    busy_fast = Option(candidate(FAST, prefill_backlog_tokens=4000, prefill_tokens_per_s=5000.0), prediction, 1.0)
    slower_standard = Option(candidate(STANDARD), Prediction(ttft_ms=250.0, e2e_ms=400.0, tpot_ms=30.0), 1.0)
    short = request(task="coding", expected_output_tokens=6, tpot_budget_ms=50.0)
    assert MostHeadroomObjective().order(short, [busy_fast, slower_standard]).variants == ("standard", "fast")
    assert MostHeadroomObjective(interference_weight=0.0).order(short, [busy_fast, slower_standard]).variants == (
        "fast", "standard")


def test_a_prompt_that_would_break_a_decode_in_flight_goes_elsewhere():
    prediction = Prediction(ttft_ms=600.0, e2e_ms=900.0, tpot_ms=10.0)
    fast = Option(candidate(FAST, decode_slack_ms=100.0), prediction, 1.0)
    standard = Option(candidate(STANDARD), Prediction(ttft_ms=700.0, e2e_ms=1100.0, tpot_ms=10.0), 1.0)
    big = request(input_tokens=2500, latency_budget_ms=2000)
    assert MostHeadroomObjective().order(big, [fast, standard]).variants == ("standard", "fast")
    assert MostHeadroomObjective(harm_penalty=0.0).order(big, [fast, standard]).variants == ("fast", "standard")


def test_when_nothing_fits_it_says_so():
    order = MostHeadroomObjective().order(request(latency_budget_ms=500), [option(STANDARD, 1000), option(FAST, 800)])
    assert (order.variants, order.reason, order.meets_budget) == (("fast", "standard"), "most-headroom-none-within-budget", False)
