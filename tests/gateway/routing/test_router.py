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


class RecordingTimer:
    def __init__(self):
        self.calls = []

    def observe(self, extension_point, plugin, elapsed_ns):
        assert isinstance(elapsed_ns, int) and elapsed_ns >= 0
        self.calls.append((extension_point, plugin))


def test_every_plugin_is_timed_once_per_decision_and_the_timer_changes_nothing():
    cands = [candidate(STANDARD, 0), candidate(FAST, 1, in_flight=2), candidate(FAST, 2)]
    timer = RecordingTimer()
    decision = route(request(latency_budget_ms=60_000), cands, PROFILE, timer=timer)
    assert timer.calls == [("filter", "healthy"), ("filter", "context-fits"), ("filter", "task-allowed"),
                           ("predictor", PROFILE.predictor.name), ("scorer", "least-loaded"),
                           ("objective", PROFILE.objective.name)]
    assert decision == route(request(latency_budget_ms=60_000), cands, PROFILE)


def test_a_refused_request_times_only_the_filters():
    timer = RecordingTimer()
    route(request(input_tokens=5000), [candidate(STANDARD, 0), candidate(FAST, 1)], PROFILE, timer=timer)
    assert [point for point, _ in timer.calls] == ["filter"] * 3


def test_verdicts_read_candidate_by_candidate_filters_before_scores():
    cands = [candidate(STANDARD, 0), candidate(FAST, 1, health=Health.DOWN), candidate(FAST, 2)]
    verdicts = [(v.plugin, v.replica_id) for v in route(request(), cands, PROFILE, explain=True).verdicts]
    assert verdicts == [("healthy", "m/standard/0"), ("context-fits", "m/standard/0"), ("task-allowed", "m/standard/0"),
                        ("healthy", "m/fast/1"),
                        ("healthy", "m/fast/2"), ("context-fits", "m/fast/2"), ("task-allowed", "m/fast/2"),
                        ("least-loaded", "m/standard/0"), ("least-loaded", "m/fast/2")]


def test_of_two_filters_rejecting_as_many_the_one_that_rejected_an_earlier_candidate_blocks():
    # The prompt is too long for m/fast/0 (context-fits), m/standard/1 is down (healthy): one each.
    cands = [candidate(FAST, 0), candidate(STANDARD, 1, health=Health.DOWN)]
    assert route(request(input_tokens=3000), cands, PROFILE).blocked_by.name == "context-fits"
