"""A fixed fleet never leaves a replica idle while another variant's queue makes requests miss
their budgets, unless parity forbids the move (issue #26): the router with Duet's fixed-fleet
objective, its step-model predictor and the filters that enforce parity."""

import pytest

from gateway.routing.filters import HealthyFilter, TaskAllowedFilter
from gateway.routing.objectives import CheapestWithinBudgetObjective, MostHeadroomObjective
from gateway.routing.predictors import StepModelPredictor
from gateway.routing.router import RoutingProfile, WeightedScorer, route
from gateway.routing.scorers import LeastLoadedScorer

from .factories import FAST, STANDARD, candidate, request


def profile(objective):
    return RoutingProfile("fixed", (HealthyFilter(), TaskAllowedFilter()), StepModelPredictor(),
                          (WeightedScorer(LeastLoadedScorer(), 1.0),), objective)


FIXED = profile(MostHeadroomObjective())
# A queue deep enough that the fast replica misses a 2 s TTFT target: every batch slot taken
# (max_num_seqs 256), 200 requests waiting for one.
QUEUED = {"in_flight": 256, "running": 256, "waiting": 200, "kv_cache_usage": 0.5}


@pytest.mark.parametrize("task", ["chat", "coding"])
@pytest.mark.parametrize("queued_variant", ["fast", "standard"])
def test_an_idle_replica_takes_the_request_that_would_miss_in_the_other_variants_queue(task, queued_variant):
    queued, idle = (FAST, STANDARD) if queued_variant == "fast" else (STANDARD, FAST)
    cands = [candidate(queued, 0, **QUEUED), candidate(idle, 1)]
    budget = request(task=task, input_tokens=500, expected_output_tokens=64, ttft_budget_ms=2000)
    decision = route(budget, cands, FIXED, explain=True)
    assert decision.predictions[cands[0].replica.id].ttft_ms > 2000  # the queue makes it miss there
    assert decision.variant == idle.name
    assert decision.meets_budget


def test_cost_alone_would_have_left_the_idle_standard_replica_idle():
    """The autoscaled fleet's objective sends it to the cheaper fast variant whenever fast is
    predicted to fit; on a fixed fleet that idle standard replica is paid for anyway."""
    cands = [candidate(FAST, 0, in_flight=10, running=10), candidate(STANDARD, 1)]
    req = request(task="chat", input_tokens=500, expected_output_tokens=64, ttft_budget_ms=2000, tpot_budget_ms=50)
    assert route(req, cands, profile(CheapestWithinBudgetObjective())).variant == "fast"
    assert route(req, cands, FIXED).variant == "standard"


def test_parity_keeps_a_refused_task_in_its_queue():
    """Reasoning is not proven on fast: however idle fast is, the request waits for standard."""
    cands = [candidate(STANDARD, 0, **QUEUED), candidate(FAST, 1)]
    decision = route(request(task="reasoning", input_tokens=500, ttft_budget_ms=2000), cands, FIXED)
    assert decision.variant == "standard"
    assert [r.variant for r in decision.ranked] == ["standard"]
