"""A budget's reservation: at admission a request holds its estimated cost against its key's
monthly budget, and gives the estimate back when it ends (settled at its actual cost, or
released unspent when it was refused after admission). Requests in flight at once therefore see
each other's estimates: they cannot all pass on spend so far and overspend together. A key can
spend at most its budget plus one request's estimate (the last one admitted before the budget was
reached), as long as no request costs more than its estimate.

The estimate is made before the request is planned (the budget is checked in the same step as the
other limits, one Redis round trip), so it is a ceiling, not the plan's prediction:

- input tokens: the body's size in bytes over ``BYTES_PER_TOKEN``. The approximate counter's
  four characters per token, on the JSON body rather than the prompt text: the body's syntax
  makes it an over-estimate for English text;
- output tokens: ``max_tokens`` (or ``max_completion_tokens``) times ``n``; without one, what
  the variant's context leaves after the input;
- priced at the most expensive variant the key may be served by (the pinned one, when pinned).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.domain import Variant

BYTES_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Demand:
    """What a request may use at most, as known from its body: its size, and the output tokens
    it allows per choice (None: as many as the context leaves) and its number of choices."""

    body_bytes: int
    max_output_tokens: int | None = None
    choices: int = 1

    def cost_usd(self, variants: Iterable[Variant]) -> float:
        """The most the request can cost on any of ``variants`` (0.0 for none)."""
        input_tokens = math.ceil(self.body_bytes / BYTES_PER_TOKEN)
        most = 0.0
        for variant in variants:
            output = self.max_output_tokens
            if output is None:
                output = max(0, variant.max_model_len - input_tokens)
            most = max(most, variant.price.cost_usd(input_tokens, output * self.choices))
        return most


@dataclass(frozen=True, slots=True)
class Hold:
    """``usd`` of ``key_id``'s budget for ``month`` (``YYYY-MM``, when the request was admitted)."""

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
