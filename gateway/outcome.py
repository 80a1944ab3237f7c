"""What happened to a request on a replica: the outcome fed back into replica state and
telemetry, and a failed attempt that the next ranked replica may still make good.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to a request on one replica; fed back into replica state and telemetry."""

    replica_id: str
    ok: bool
    status: int
    ttft_s: float | None
    duration_s: float
    input_tokens: int
    output_tokens: int
    # The latency model's uncorrected prediction for this request (seconds), when there was one.
    predicted_ttft_s: float | None = None
    predicted_tpot_s: float | None = None


@dataclass(frozen=True, slots=True)
class AttemptFailure:
    """A replica that did not take a request before anything reached the client: a connect error
    or timeout (status 502 / 504), or a retryable status it answered with. The next ranked replica
    may still take the request."""

    replica_id: str
    status: int
    detail: str
    duration_s: float
