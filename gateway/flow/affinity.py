"""Stateful requests go where their state is. vLLM keeps a stored response (the Responses API's
``store``) in the memory of the replica that wrote it, so a request naming it in
``previous_response_id`` can only be answered there. ``ResponseHomes`` remembers, for the most
recent responses this gateway relayed, which replica holds each. It is written when the request
is dispatched (the response's id is the gateway's, known before it is answered), not when it is
done: behind Envoy the client has the answer, and may send its follow-up, before the picker hears
that the response ended, and a follow-up that overtook a ``done`` was routed as new and answered
404 (seen on a loaded machine). A failed answer takes its entry back. Per gateway process:
behind several gateways, a follow-up that lands on another one is routed as a new request (and
the replica answers 404 if it does not hold the response)."""

from __future__ import annotations

from collections import OrderedDict

from gateway.endpoints import RequestBody, ResponsesBody
from gateway.flow.exchange import Attempt, Exchange
from gateway.outcome import Outcome

REMEMBERED = 100_000


def response_id(exchange: Exchange) -> str:
    """The id the replica gives the response: the body's ``request_id``, which the gateway sets
    to ``resp_<its request id>`` when the client did not (``gateway.flow.upstream``)."""
    body = exchange.inbound.body
    assert isinstance(body, ResponsesBody)
    return body.request_id or f"resp_{exchange.request_id}"


class ResponseHomes:
    """Response id -> the id of the replica that holds it, the ``capacity`` most recent."""

    def __init__(self, capacity: int = REMEMBERED) -> None:
        self._capacity = capacity
        self._homes: OrderedDict[str, str] = OrderedDict()

    def home_of(self, body: RequestBody) -> str | None:
        """The replica that holds the response this request continues (None: not stateful, or not known)."""
        if not isinstance(body, ResponsesBody) or body.previous_response_id is None:
            return None
        return self._homes.get(body.previous_response_id)

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        """The attempt's replica will hold the response if it answers (a retry elsewhere moves it)."""
        if isinstance(exchange.inbound.body, ResponsesBody):
            key = response_id(exchange)
            self._homes[key] = attempt.replica.id
            self._homes.move_to_end(key)
            if len(self._homes) > self._capacity:
                self._homes.popitem(last=False)

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        """A response that was not stored (the request failed) has no home."""
        if isinstance(exchange.inbound.body, ResponsesBody) and not (outcome.ok and outcome.status == 200):
            key = response_id(exchange)
            if self._homes.get(key) == outcome.replica_id:
                del self._homes[key]
