from gateway.domain import Health
from gateway.routing.filters import ContextFitsFilter, HealthyFilter, TaskAllowedFilter
from gateway.routing.objectives import CheapestWithinBudgetObjective
from gateway.routing.predictors import QueueAwareLatencyPredictor
from gateway.routing.router import RoutingProfile, WeightedScorer, route
from gateway.routing.scorers import LeastLoadedScorer

from .factories import FAST, STANDARD, candidate, request

PROFILE = RoutingProfile(
    name="default",
    filters=(HealthyFilter(), ContextFitsFilter(), TaskAllowedFilter()),
    predictor=QueueAwareLatencyPredictor(),
    scorers=(WeightedScorer(LeastLoadedScorer(), 1.0),),
    objective=CheapestWithinBudgetObjective(),
)


def ids(decision):
    return [r.id for r in decision.ranked]


def test_cheapest_variant_first_then_fallbacks_with_replicas_by_load():
    cands = [candidate(STANDARD, 0), candidate(FAST, 1, in_flight=2), candidate(FAST, 2)]
    decision = route(request(latency_budget_ms=60_000), cands, PROFILE)
    assert decision.variant == "fast"
    assert ids(decision) == ["m/fast/2", "m/fast/1", "m/standard/0"]
    assert decision.meets_budget


def test_task_not_proven_on_fast_goes_to_standard():
    decision = route(request(task="reasoning"), [candidate(STANDARD, 0), candidate(FAST, 1)], PROFILE)
    assert decision.variant == "standard"
    assert ids(decision) == ["m/standard/0"]


def test_pinned_variant_is_the_only_choice():
    decision = route(request(pinned_variant="standard"), [candidate(STANDARD, 0), candidate(FAST, 1)], PROFILE)
    assert (decision.variant, decision.reason, ids(decision)) == ("standard", "pinned", ["m/standard/0"])


def test_no_candidate_names_the_blocking_filter():
    decision = route(request(input_tokens=5000), [candidate(STANDARD, 0), candidate(FAST, 1)], PROFILE)
    assert decision.ranked == () and decision.reason == "no-candidate:context-fits"
    down = route(request(), [candidate(STANDARD, 0, health=Health.DOWN), candidate(FAST, 1, health=Health.UNKNOWN)], PROFILE)
    assert down.reason == "no-candidate:healthy"


def test_explain_records_every_verdict_only_when_asked():
    cands = [candidate(STANDARD, 0), candidate(FAST, 1, health=Health.DOWN)]
    quiet = route(request(), cands, PROFILE)
    loud = route(request(), cands, PROFILE, explain=True)
    assert quiet.verdicts == ()
    plugins = [(v.plugin, v.replica_id, v.passed) for v in loud.verdicts]
    assert ("healthy", "m/fast/1", False) in plugins
    assert ("least-loaded", "m/standard/0", True) in plugins
    assert loud.ranked == quiet.ranked


def test_overloaded_fast_variant_loses_to_standard_within_budget():
    # 30 sequences on the fast replica: its predicted time per token passes the standard's.
    cands = [candidate(STANDARD, 0), candidate(FAST, 1, running=30)]
    decision = route(request(latency_budget_ms=8_000), cands, PROFILE)
    assert decision.variant == "standard"
