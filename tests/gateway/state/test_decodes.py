"""The decode ledger: each request's slack, the stall later prompts charge to it, each replica's least slack."""

from __future__ import annotations

from gateway.state.decodes import DecodeClaim, DecodeLedger


def test_each_later_prompt_is_charged_to_the_requests_already_on_its_replica_only():
    ledger = DecodeLedger()
    first = ledger.add("a", slack_ms=150.0, prefill_ms=40.0)
    ledger.add("b", slack_ms=500.0, prefill_ms=90.0)  # another replica: no harm to ``first``
    assert ledger.least_slack == {"a": 150.0, "b": 500.0}
    second = ledger.add("a", slack_ms=300.0, prefill_ms=100.0)
    assert ledger.least_slack["a"] == 50.0  # ``first`` waits out the second prompt's prefill
    assert ledger.done("a", first) == 100.0
    assert ledger.least_slack["a"] == 300.0
    assert ledger.done("a", second) == 0.0
    assert "a" not in ledger.least_slack


def test_requests_past_their_budget_or_without_one_are_not_protected():
    ledger = DecodeLedger()
    unbudgeted = ledger.add("a", slack_ms=None, prefill_ms=10.0)
    assert ledger.least_slack == {}
    ledger.add("a", slack_ms=30.0, prefill_ms=10.0)
    ledger.add("a", slack_ms=None, prefill_ms=50.0)  # the second request is now 20 ms past its budget
    assert ledger.least_slack == {}
    assert ledger.done("a", unbudgeted) == 60.0  # stall is counted for every request, budget or not


def test_done_is_idempotent_and_tickets_never_collide():
    ledger = DecodeLedger()
    tickets = {ledger.add("a", 100.0, 1.0) for _ in range(3)}
    assert len(tickets) == 3
    ticket = tickets.pop()
    ledger.done("a", ticket)
    assert ledger.done("a", ticket) == 0.0
    assert ledger.done("nowhere", ticket) == 0.0


def test_a_claim_enters_what_it_says_for_the_replica_that_took_the_request():
    ledger = DecodeLedger()
    claim = DecodeClaim(slack_ms={"a": 80.0, "b": None}, prefill_ms={"a": 5.0, "b": 7.0})
    ledger.claim("b", claim)
    ledger.claim("a", claim)
    assert ledger.least_slack == {"a": 80.0}
