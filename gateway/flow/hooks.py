"""The request lifecycle's events, after llm-d's request-control plugins (PreRequest,
ResponseStreaming, ResponseComplete). The director fires them; bookkeeping subscribes:

- ``dispatched(exchange, attempt)``: the request is being sent to ``attempt.replica``;
- ``first_token(exchange, attempt)``: the replica prefilled its prompt (first streamed event, or
  a whole non-stream answer);
- ``attempt_ended(exchange, attempt, outcome)``: that replica's part is over, answered or failed
  (once per attempt, fallbacks included);
- ``done(exchange, outcome)``: the request ended for the client (once, after its last attempt);
- ``refused(exchange, error)``: the request ended without reaching a replica (``exchange`` is
  None when it was refused before it could be planned).

Subscribers are plain callables in lists, called in order: the hot path pays one call per
subscriber that cares about an event, nothing for those that do not. A subscriber to
``attempt_ended`` or ``done`` may be a coroutine function (it needs I/O: the Redis store, quota
settlement) or a plain one (returns None): the director awaits only what returns an awaitable, so
bookkeeping that never waits costs no coroutine per request. Order matters where one subscriber
reads what an earlier one noted (the decode ledger's stall before the latency learner).

``timer`` takes each subscriber's time per event, and the director hands it to the router for
its plugins' (``gateway.routing.timing``): the running gateway's telemetry records them as
``duet_extension_point_duration_seconds``; by default nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from gateway.errors import RequestError
from gateway.flow.exchange import Attempt, Exchange
from gateway.outcome import Outcome
from gateway.routing.timing import NO_TIMING, ExtensionTimer

OnAttempt = Callable[[Exchange, Attempt], None]
OnAttemptEnded = Callable[[Exchange, Attempt, Outcome], Awaitable[None] | None]
OnDone = Callable[[Exchange, Outcome], Awaitable[None] | None]
OnRefused = Callable[[Exchange | None, RequestError], None]

# The events as extension points (the label of their subscribers' times).
DISPATCHED: Final = "dispatched"
FIRST_TOKEN: Final = "first_token"
ATTEMPT_ENDED: Final = "attempt_ended"
DONE: Final = "done"
REFUSED: Final = "refused"


@dataclass(slots=True)
class Hooks:
    dispatched: list[OnAttempt] = field(default_factory=list)
    first_token: list[OnAttempt] = field(default_factory=list)
    attempt_ended: list[OnAttemptEnded] = field(default_factory=list)
    done: list[OnDone] = field(default_factory=list)
    refused: list[OnRefused] = field(default_factory=list)
    timer: ExtensionTimer = NO_TIMING
