"""What a request may use and cost at most, from its body, for its key's spend-limit reservation
(``gateway.access.reservation``): taken before the request is planned, so the spend is held in
the same step, and the same Redis round trip, as every other limit."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel

from gateway.domain import Variant

BYTES_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class UsageCeiling:
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


def ceiling_of(body: BaseModel, body_bytes: int) -> UsageCeiling:
    """``body``: any validated request body; the output it allows is its ``max_completion_tokens``,
    ``max_tokens`` or ``max_output_tokens`` (the Responses API's; None when it sets none: as much
    as the context leaves) times ``n``."""
    max_output = next((limit for name in ("max_completion_tokens", "max_tokens", "max_output_tokens")
                       if (limit := getattr(body, name, None)) is not None), None)
    return UsageCeiling(body_bytes, max_output, getattr(body, "n", None) or 1)
