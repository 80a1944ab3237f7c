"""A spend limit's reservation: at admission a request holds its estimated cost against its
key's monthly spend limit, and gives the estimate back when it ends (settled at its actual cost,
or released unspent when it was refused after admission). Requests in flight at once therefore
see each other's estimates: they cannot all pass on spend so far and overspend together. A key
can spend at most its limit plus one request's estimate (the last one admitted before the limit
was reached), as long as no request costs more than its estimate.

The estimate is made before the request is planned (the spend limit is checked in the same step
as the other limits, one Redis round trip), so it is a ceiling (``gateway.access.ceiling``), not
the plan's prediction:

- input tokens: the body's size in bytes over ``BYTES_PER_TOKEN``. The approximate counter's
  four characters per token, on the JSON body rather than the prompt text: the body's syntax
  makes it an over-estimate for English text;
- output tokens: ``max_tokens`` (or ``max_completion_tokens``) times ``n``; without one, what
  the variant's context leaves after the input;
- priced at the most expensive variant the key may be served by (the pinned one, when pinned).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hold:
    """``usd`` of ``key_id``'s spend limit for ``month`` (``YYYY-MM``, when the request was admitted)."""

    key_id: str
    month: str
    usd: float


class Reservation:
    """One admitted request's hold, given back exactly once: ``take`` returns it the first time
    (to settle it, or release it) and None after."""

    __slots__ = ("_hold",)

    def __init__(self, hold: Hold) -> None:
        self._hold: Hold | None = hold

    def take(self) -> Hold | None:
        hold, self._hold = self._hold, None
        return hold
