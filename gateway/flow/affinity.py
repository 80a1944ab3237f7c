"""Stateful requests go where their state is. vLLM keeps a stored response (the Responses API's
``store``) in the memory of the replica that wrote it, so a request naming it in
``previous_response_id`` can only be answered there. ``ResponseHomes`` remembers, for the most
recent responses this gateway relayed, which replica holds each; a ``done`` subscriber fills it.
Per gateway process: behind several gateways, a follow-up that lands on another one is routed
as a new request (and the replica answers 404 if it does not hold the response)."""

from __future__ import annotations

from collections import OrderedDict

from gateway.endpoints import RequestBody, ResponsesBody
from gateway.flow.exchange import Exchange
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

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        if outcome.ok and outcome.status == 200 and isinstance(exchange.inbound.body, ResponsesBody):
            self._homes[response_id(exchange)] = outcome.replica_id
            self._homes.move_to_end(response_id(exchange))
            if len(self._homes) > self._capacity:
                self._homes.popitem(last=False)
