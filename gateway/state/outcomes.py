"""What a finished request says about the replica that served it.

The one place that decides which outcomes count against a replica:

- ``ok``                                  -> SUCCESS
- 429 from the replica                    -> OVERLOAD: the replica is alive but full. It counts in
  the error rate (so routing leans away) but never trips the breaker: opening on overload would
  push the whole load onto the other replicas and cascade.
- any other 4xx (400, 404, 413, ...; 499 for a client that went away) -> CLIENT: the request's
  fault, not the replica's. Counted nowhere.
- 5xx, no response (status 0: connect error, timeout, reset), or a stream that broke after a 200
  (``ok=False`` with a 2xx status) -> FAILURE: counts in the error rate and towards the breaker.
"""

from __future__ import annotations

from enum import Enum

from gateway.outcome import Outcome


class OutcomeKind(Enum):
    """How one outcome bears on a replica's health."""

    SUCCESS = "success"
    OVERLOAD = "overload"
    CLIENT = "client"
    FAILURE = "failure"


def classify(outcome: Outcome) -> OutcomeKind:
    """Sort an outcome into the kind that decides how state reacts to it (rules above)."""
    if outcome.ok:
        return OutcomeKind.SUCCESS
    if outcome.status == 429:
        return OutcomeKind.OVERLOAD
    if 400 <= outcome.status < 500:
        return OutcomeKind.CLIENT
    return OutcomeKind.FAILURE
