"""What the desired-replicas gauge sizes the fleet for: each client request of an autoscaled
model, counted once into the demand store (``gateway.state.demand``) from the lifecycle's hooks.

- **Arrival**: when the request leaves for its first replica (``dispatched`` with its first
  attempt), or is refused without reaching one. That is when its fate is decided, once per client
  request: a re-plan in the waiting room, a fallback attempt or an escalation to the standard
  variant is the same request, and a dry run (``/v1/duet/route``) or an untracked call
  (/tokenize) never dispatches through the hooks. A request that waits for a slot counts when it
  gets one (the wait is bounded by its deadline); one whose client leaves while it waits is not
  counted.
- **Refused** requests count when the fleet refused them (shed, no replica could start them in
  time, none healthy: 429 and 5xx): that is traffic the fleet should have served, and leaving it
  out would hide the overload the gauge exists to end. A client's mistake (400: longer than
  every context, tools no variant serves) is not: no replica count would serve it.
- **Answer**: the output tokens of a request that ended well, as the length learner counts them.
- **Task**: the one the request ran as (``profile.task``). A pinned request counts as its task
  too (the store is per task, not per variant; pins are for tests and comparisons, a small
  share). Online parity's shadow side runs through a director of its own with routing's hooks
  only, in spare capacity, and is not counted: the fleet is not sized for checks that wait for
  slack.
"""

from __future__ import annotations

from gateway.errors import RequestError
from gateway.flow.exchange import Attempt, Exchange
from gateway.flow.hooks import Hooks
from gateway.outcome import Outcome
from gateway.scaling.policy import Autoscaling
from gateway.state.demand import DemandStore


class DemandKeeper:
    """Subscribes to ``dispatched``, ``refused`` and ``done``; see the module docstring."""

    def __init__(self, demand: DemandStore) -> None:
        self._demand = demand

    def subscribe(self, hooks: Hooks) -> None:
        hooks.dispatched.append(self.dispatched)
        hooks.refused.append(self.refused)
        hooks.done.append(self.done)

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        if exchange.attempts == 1:
            self._arrived(exchange)

    def refused(self, exchange: Exchange | None, error: RequestError) -> None:
        if exchange is not None and exchange.dispatched_at is None and (error.status == 429 or error.status >= 500):
            self._arrived(exchange)

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        profile = exchange.plan.profile
        if outcome.ok and outcome.output_tokens > 0 and (scaling := _autoscaling(exchange)) is not None:
            self._demand.answered(profile.model, profile.task, outcome.output_tokens, scaling.rate_window_s)

    def _arrived(self, exchange: Exchange) -> None:
        profile = exchange.plan.profile
        if (scaling := _autoscaling(exchange)) is not None:
            self._demand.arrived(profile.model, profile.task, profile.input_tokens, scaling.rate_window_s)


def _autoscaling(exchange: Exchange) -> Autoscaling | None:
    """The model's autoscaling in the config the request was planned with (None: not autoscaled)."""
    return exchange.plan.target.model.autoscaling
