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

from typing import Any

from gateway.flow import Price, ReplicaCost, SpeedPrior
from serving.launch import load_profiles
from serving.sim.fidelity.prior import speed_prior
from serving.sim.parallel import load_profile
from serving.sim.profile import Profile

H100_USD_PER_GPU_HOUR = 3.00


def replica_cost(profile_name: str, usd_per_gpu_hour: float = H100_USD_PER_GPU_HOUR) -> ReplicaCost:
    """A variant's replica cost from its launch profile's GPUs (``resources.gpus``)."""
    return ReplicaCost(load_profiles()[profile_name].gpus, usd_per_gpu_hour)


def chargeback_price(profile: Profile, cost: ReplicaCost) -> Price:
    """The gateway's chargeback (``ReplicaCost.chargeback``) on the speed prior of ``profile``:
    the same per-token prices a Duet config with this replica cost and speed derives."""
    return cost.chargeback(prior_of(profile))


def prior_of(profile: Profile) -> SpeedPrior:
    raw: dict[str, Any] = speed_prior(profile)
    return SpeedPrior(**{**raw, "tokens_per_step": tuple(sorted(raw.get("tokens_per_step", {}).items()))})


def variant_pricing(profile_name: str) -> tuple[Price, ReplicaCost]:
    """The chargeback price and the replica cost of the variant served from ``profile_name``."""
    cost = replica_cost(profile_name)
    return chargeback_price(load_profile(profile_name), cost), cost
