"""The routing plan for a P/D fleet: pairs first when the rule splits, the co-located replicas
after them; a prefill-role replica is never ranked (it would answer one token), and every
ranked decode-role replica has the prefill whose KV it decodes."""

from __future__ import annotations

import pytest

from gateway.decision import Decision
from gateway.domain import Candidate, EngineRole, RequestProfile
from gateway.routing.pd.rules import DuetRule, NeverSplit, SplitRule, ThresholdRule
from gateway.routing.pd.split import has_pairs, with_split
from gateway.routing.router import route

from ..factories import request
from .fleet import DOWN, FAST_ON_STANDARD, PROFILE, both, decode, prefill


def plan(profile: RequestProfile, fleet: list[Candidate], rule: SplitRule) -> Decision:
    return with_split(profile, route(profile, fleet, PROFILE), fleet, PROFILE, rule)


def ids(decision: Decision) -> list[str]:
    return [r.id for r in decision.ranked]


FLEETS = {
    "colocated and a pair": [both(0), prefill(1), decode(2)],
    "pairs only": [prefill(1), prefill(2), decode(3), decode(4)],
    "colocated busy": [both(0, running=8, decode_slack_ms=5.0), prefill(1), decode(2)],
    "pair down": [both(0), prefill(1, **DOWN), decode(2)],
    "speculative decode on standard KV": [both(0), prefill(1), decode(2, FAST_ON_STANDARD)],
}
REQUESTS = [request(input_tokens=n, tpot_budget_ms=t) for n in (10, 3000, 12000) for t in (None, 25)]
RULES = [DuetRule(), ThresholdRule(), NeverSplit()]


@pytest.mark.parametrize("fleet", FLEETS.values(), ids=list(FLEETS))
@pytest.mark.parametrize("rule", RULES, ids=["duet", "threshold", "never"])
def test_no_plan_sends_a_prompt_whole_to_a_prefill_or_decode_replica(fleet: list[Candidate], rule: SplitRule) -> None:
    roles = {c.replica.id: c.replica.engine.role for c in fleet}
    for profile in REQUESTS:
        decision = plan(profile, fleet, rule)
        for replica in decision.ranked:
            assert roles[replica.id] is not EngineRole.PREFILL  # never decodes a client's answer
            if roles[replica.id] is EngineRole.DECODE:  # never without transferred KV
                assert decision.prefill_for[replica.id].engine.role is EngineRole.PREFILL
        assert set(decision.prefill_for) <= set(ids(decision))


def test_a_split_ranks_the_pairs_then_the_colocated_replica_as_fallbacks() -> None:
    decision = plan(request(input_tokens=3000), FLEETS["colocated and a pair"], ThresholdRule())
    assert ids(decision) == ["m/standard/2", "m/standard/0"]
    assert decision.prefill_for["m/standard/2"].id == "m/standard/1"
    assert ";split:" in decision.reason and "m/standard/2" in decision.predictions


def test_kept_whole_the_decision_is_the_routers() -> None:
    fleet = FLEETS["colocated and a pair"]
    profile = request(input_tokens=10)
    decision = plan(profile, fleet, ThresholdRule())
    assert ids(decision) == ["m/standard/0"] and not decision.prefill_for
    assert decision.reason.endswith(";whole:10 uncached tokens < 16")
    assert ids(plan(request(input_tokens=10), fleet, DuetRule())) == ["m/standard/0"]


@pytest.mark.parametrize("rule", RULES, ids=["duet", "threshold", "never"])
def test_a_fleet_of_pairs_only_splits_every_request_whatever_the_rule(rule: SplitRule) -> None:
    """With no co-located replica the router ranks none; a pair is the only way to serve."""
    decision = plan(request(input_tokens=10), FLEETS["pairs only"], rule)
    assert ids(decision) == ["m/standard/3", "m/standard/4"]
    assert decision.variant == "standard" and decision.blocked_by is None and decision.reason.startswith("split:")


def test_duet_moves_a_request_no_whole_replica_can_serve_in_budget_to_a_pair_that_can() -> None:
    """The objective chose among whole replicas, all predicted to miss the TPOT budget (busy);
    an idle pair meets it: Duet's rule takes it there, llm-d's threshold does not look."""
    fleet = [both(0, running=200), prefill(1), decode(2)]
    profile = request(input_tokens=10, tpot_budget_ms=40)
    assert not route(profile, fleet, PROFILE).meets_budget
    decision = plan(profile, fleet, DuetRule())
    assert ids(decision) == ["m/standard/2", "m/standard/0"] and "a pair meets the budget" in decision.reason
    assert decision.meets_budget
    assert ids(plan(profile, fleet, ThresholdRule())) == ["m/standard/0"]  # 10 uncached tokens < 16


def test_duet_splits_a_long_prompt_beside_busy_decodes_and_keeps_a_short_one_whole() -> None:
    fleet = FLEETS["colocated busy"]
    assert ids(plan(request(input_tokens=3000), fleet, DuetRule()))[0] == "m/standard/2"
    assert ids(plan(request(input_tokens=10), fleet, DuetRule())) == ["m/standard/0"]


def test_a_pinned_variant_only_pairs_its_own_decode_replicas() -> None:
    fleet = FLEETS["speculative decode on standard KV"]
    assert plan(request(input_tokens=3000, pinned_variant="standard"), fleet, ThresholdRule()).prefill_for == {}


def test_has_pairs_looks_for_decode_replicas() -> None:
    assert has_pairs(FLEETS["colocated and a pair"]) and not has_pairs([both(0), prefill(1)])
