"""What serving costs: a replica's hourly bill (``ReplicaCost``, what a self-hosted fleet pays)
and the per-token ``Price`` a chargeback derives from it on a variant's speed. Part of the
vocabulary beneath ``gateway.domain``; imports only ``gateway.speed``."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.speed import SpeedPrior


@dataclass(frozen=True, slots=True)
class Price:
    """USD per one million tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


# The decode batch a chargeback assumes: a replica that shares each step among this many
# sequences charges each of them its share (busier replicas cost less per token, idle ones more;
# one reference keeps prices comparable between variants).
CHARGEBACK_BATCH = 32


@dataclass(frozen=True, slots=True)
class ReplicaCost:
    """What one replica of a variant costs per hour, busy or idle: ``gpus`` x ``usd_per_gpu_hour``.
    A self-hosted fleet's bill; a per-token price is only a chargeback derived from it."""

    gpus: int
    usd_per_gpu_hour: float

    @property
    def usd_per_hour(self) -> float:
        return self.gpus * self.usd_per_gpu_hour

    def fleet_usd(self, replicas: int, seconds: float) -> float:
        """The bill of ``replicas`` replicas kept for ``seconds``."""
        return replicas * seconds / 3600.0 * self.usd_per_hour

    def chargeback(self, speed: SpeedPrior) -> Price:
        """Per-token prices that charge a request for the replica time it uses on ``speed``: a
        prompt token its prefill time, an output token its share of a decode step at
        ``CHARGEBACK_BATCH`` sequences (speculation: divided by the tokens a step yields on
        default traffic, the drafts verified counted in the step)."""
        usd_per_s = self.usd_per_hour / 3600.0
        per_output_s = speed.output_token_s("default", CHARGEBACK_BATCH)
        return Price(round(usd_per_s / speed.prefill_tokens_per_s * 1e6, 4), round(usd_per_s * per_output_s * 1e6, 4))
