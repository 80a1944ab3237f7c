"""What a request may cost at most, from its body, for its key's budget reservation
(``gateway.access.reservation``): taken before the request is planned, so the budget is held in
the same step, and the same Redis round trip, as every other limit."""

from __future__ import annotations

from pydantic import BaseModel

from gateway.access.reservation import Demand


def demand_of(body: BaseModel, body_bytes: int) -> Demand:
    """``body``: any validated request body; the output it allows is its ``max_completion_tokens``,
    ``max_tokens`` or ``max_output_tokens`` (the Responses API's; None when it sets none: as much
    as the context leaves) times ``n``."""
    max_output = next((limit for name in ("max_completion_tokens", "max_tokens", "max_output_tokens")
                       if (limit := getattr(body, name, None)) is not None), None)
    return Demand(body_bytes, max_output, getattr(body, "n", None) or 1)
