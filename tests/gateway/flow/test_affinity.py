"""Which replica holds each stored response: remembered from dispatch, forgotten on failure,
bounded, and only asked for requests that continue a response."""

from __future__ import annotations

from types import SimpleNamespace

from gateway.endpoints import ChatBody, ResponsesBody, validate_body
from gateway.flow.affinity import ResponseHomes
from gateway.outcome import Outcome


def _responses(**fields):
    return validate_body({"model": "m", "input": "hi", **fields}, ResponsesBody)[1]


def _done(homes, request_id, replica, body=None, status=200):
    """The request dispatched to ``replica``, then its outcome."""
    exchange = SimpleNamespace(inbound=SimpleNamespace(body=body or _responses()), request_id=request_id)
    homes.dispatched(exchange, SimpleNamespace(replica=SimpleNamespace(id=replica)))
    homes.done(exchange, Outcome(replica, status < 500, status, None, 0.1, 1, 1))


def test_the_home_is_known_from_dispatch_before_the_answer_ends():
    """Behind Envoy the client may send its follow-up before the picker hears the answer ended."""
    homes = ResponseHomes()
    exchange = SimpleNamespace(inbound=SimpleNamespace(body=_responses()), request_id="early")
    homes.dispatched(exchange, SimpleNamespace(replica=SimpleNamespace(id="m/fast/0")))
    assert homes.home_of(_responses(previous_response_id="resp_early")) == "m/fast/0"


def test_a_retry_moves_the_home_and_the_failed_attempt_does_not_take_it_back():
    homes = ResponseHomes()
    exchange = SimpleNamespace(inbound=SimpleNamespace(body=_responses()), request_id="moved")
    homes.dispatched(exchange, SimpleNamespace(replica=SimpleNamespace(id="first")))
    homes.dispatched(exchange, SimpleNamespace(replica=SimpleNamespace(id="second")))
    homes.done(exchange, Outcome("first", False, 503, None, 0.1, 1, 0))  # a late report of the first attempt
    assert homes.home_of(_responses(previous_response_id="resp_moved")) == "second"


def test_a_follow_up_finds_the_replica_that_answered():
    homes = ResponseHomes()
    _done(homes, "a1", "m/fast/0")
    _done(homes, "a2", "m/standard/0", body=_responses(request_id="resp_mine"))
    assert homes.home_of(_responses(previous_response_id="resp_a1")) == "m/fast/0"
    assert homes.home_of(_responses(previous_response_id="resp_mine")) == "m/standard/0"
    assert homes.home_of(_responses(previous_response_id="resp_other")) is None
    assert homes.home_of(_responses()) is None


def test_failures_and_other_apis_are_not_remembered_and_the_map_is_bounded():
    homes = ResponseHomes(capacity=2)
    _done(homes, "bad", "r", status=502)
    chat = validate_body({"model": "m", "messages": [{"role": "user", "content": "x"}]}, ChatBody)[1]
    _done(homes, "chat", "r", body=chat)
    for i in range(3):
        _done(homes, f"r{i}", f"replica{i}")
    found = [homes.home_of(_responses(previous_response_id=f"resp_{rid}")) for rid in ("bad", "chat", "r0", "r1", "r2")]
    assert found == [None, None, None, "replica1", "replica2"]


def test_a_responses_body_reads_as_chat_for_classification_but_is_forwarded_as_sent():
    data = {"model": "m", "instructions": "Be brief.", "max_output_tokens": 5,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "def f(): pass"}]},
                      {"type": "function_call_output", "call_id": "c", "output": "42"}]}
    raw, body = validate_body(data, ResponsesBody)
    assert "messages" not in raw and body.output_limit() == 5
    assert [m["role"] for m in body.messages] == ["system", "user", "tool"]
