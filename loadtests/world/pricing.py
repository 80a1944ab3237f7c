"""What a fleet pays: a replica costs its GPUs x a $/GPU-hour whether it is busy or idle, so a
run's bill is its replica-hours. A per-token price is only a chargeback derived from that bill:
what a request used of its replica's time.

The $/GPU-hour is a stated figure, not a measurement: H100 SXM on demand at specialty GPU clouds
listed $2.50-3.50 per GPU-hour in May 2026 (Mercatus, "Cloud GPU pricing", its May 2026 table;
pricegpu's early-2026 survey of CoreWeave, Lambda, Crusoe and RunPod gives $2.49-3.99). Duet
uses the middle, $3.00. Only ratios between fleets matter to the comparisons; the figure sets
the scale of the dollars printed beside them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.flow import Price
from serving.launch import load_profiles
from serving.sim.profile import Profile, load_profile
from serving.sim.stepcost import expected_tokens_per_step

H100_USD_PER_GPU_HOUR = 3.00
# The decode batch a chargeback assumes: a replica that shares each step among this many
# sequences charges each of them its share. Busier replicas cost less per token, idle ones more;
# one reference keeps prices comparable between variants.
CHARGEBACK_BATCH = 32


@dataclass(frozen=True, slots=True)
class ReplicaCost:
    """What one replica of a variant costs per hour: ``gpus`` x ``usd_per_gpu_hour``."""

    gpus: int
    usd_per_gpu_hour: float = H100_USD_PER_GPU_HOUR

    @property
    def usd_per_hour(self) -> float:
        return self.gpus * self.usd_per_gpu_hour

    def fleet_usd(self, replicas: int, seconds: float) -> float:
        """The bill of ``replicas`` replicas kept for ``seconds``, busy or idle."""
        return replicas * seconds / 3600.0 * self.usd_per_hour


def replica_cost(profile_name: str, usd_per_gpu_hour: float = H100_USD_PER_GPU_HOUR) -> ReplicaCost:
    """A variant's replica cost from its launch profile's GPUs (``resources.gpus``)."""
    return ReplicaCost(load_profiles()[profile_name].gpus, usd_per_gpu_hour)


def chargeback_price(profile: Profile, cost: ReplicaCost) -> Price:
    """Per-token prices that charge a request for the replica time it used: a prompt token its
    prefill time, an output token its share of a decode step at ``CHARGEBACK_BATCH`` sequences
    (speculative variants: divided by the tokens a step yields on default traffic)."""
    step = profile.step
    usd_per_s = cost.usd_per_hour / 3600.0
    tokens_per_step = 1.0
    draft_s = 0.0
    if profile.speculation is not None:
        spec = profile.speculation
        default = spec.for_task("default")
        tokens_per_step = (default.proposal_rate * expected_tokens_per_step(default.acceptance, spec.num_speculative_tokens)
                           + (1.0 - default.proposal_rate))
        draft_s = spec.draft_s_per_step + spec.draft_s_per_seq * CHARGEBACK_BATCH
        verified = 1 + spec.num_speculative_tokens * default.proposal_rate
    else:
        verified = 1.0
    step_s = step.base_s + step.decode_s_per_token * CHARGEBACK_BATCH * verified + draft_s
    per_output_s = step_s / CHARGEBACK_BATCH / tokens_per_step
    return Price(round(usd_per_s * step.prefill_s_per_token * 1e6, 4), round(usd_per_s * per_output_s * 1e6, 4))


def variant_pricing(profile_name: str) -> tuple[Price, ReplicaCost]:
    """The chargeback price and the replica cost of the variant served from ``profile_name``."""
    cost = replica_cost(profile_name)
    return chargeback_price(load_profile(profile_name), cost), cost
