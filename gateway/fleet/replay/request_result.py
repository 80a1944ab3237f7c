"""What the replay reports of one request: its status, variant, tokens, times as the client saw
them, the predictions made for it and its cost (``RequestResult``); reports, sweeps and
diagnosis read these."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.flow import Budget, Prediction


@dataclass(frozen=True, slots=True)
class RequestResult:
    """One replayed request. ``status``: ``ok``, ``rejected`` (no replica took it) or ``failed``."""

    arrival_s: float
    task: str
    status: str
    variant: str | None
    input_tokens: int
    output_tokens: int
    ttft_s: float | None = None
    e2e_s: float | None = None
    predicted: Prediction | None = None
    budget: Budget = Budget()
    cost_usd: float = 0.0
    # Duet's step-model prediction on the replica that served it (see Replay), for every policy,
    # given the true output length (``predicted`` is the policy's own, with the length it expected).
    step_model: Prediction | None = None
    # Why routing chose the variant (``x-duet-route``), or the HTTP status a rejected request got.
    route: str = ""
    refusal_status: int | None = None
    # The output length the router planned with (forced, learned, or the task's typical one).
    expected_output_tokens: int | None = None
    # Prompt tokens the serving engine found in its prefix cache (vLLM's per-request hit).
    cached_tokens: int = 0
    # The replica that served it and how long it waited in the gateway first (for diagnosis:
    # which requests shared a replica when).
    replica: str | None = None
    waited_s: float = 0.0

    @property
    def tpot_s(self) -> float | None:
        """vLLM bench serve's TPOT: (latency - TTFT) / (output tokens - 1)."""
        if self.ttft_s is None or self.e2e_s is None or self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)

    @property
    def met_slo(self) -> bool:
        return self.status == "ok" and self.e2e_s is not None and self.budget.met_by(self.ttft_s, self.e2e_s,
                                                                                       self.output_tokens)
