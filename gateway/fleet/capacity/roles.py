"""Engine roles in Duet's plan (issue #37, over issue #36's replay suffixes): a variant's replicas
split into a large-budget and a small-budget group, and some standard replicas prefill-only, as a
rule over the fleet's counts, so that the count search (``search.py``) can try any fleet in one
role mix.

The rule, for a fleet of ``n`` replicas of a variant named in ``large``: the first ``n // 2`` at
that variant's large chunk budget, the rest at ``small`` (a variant with one replica, or not
named, keeps its layout's budget); with ``prefill`` P, the standard variant's first
``min(P, n // 2)`` replicas prefill-only and the rest ``both`` with a KV connector, split by
Duet's rule (``@pd=P:0:duet``). So the prefill replicas are the large-budget ones, as in
issue #36's layout.

The candidates (``ROLE_MIXES``) are not searched over budgets: they are issue #36's layout,
chosen there on the tuning window (``duet-fixed@pd=2:0:duet@chunk=standard:2x16384+2048:fast:
1x8192+2048``), with and without its prefill replicas. A role mix changes no replica's GPUs, so
no fleet's cost; only Duet's layouts take one (baselines keep one configuration for all their
replicas).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.fleet.replay.policy_names import CHUNK, PD
from gateway.flow import EngineConfig, EngineRole

# The connector the replay's P/D roles move KV through (``setup.lay_out_roles``).
KV_CONNECTOR = "NixlConnector"


@dataclass(frozen=True, slots=True)
class RoleMix:
    """Chunk-budget groups per variant (``large``: variant -> the budget of its first half;
    the rest at ``small``) and at most ``prefill`` standard replicas prefill-only."""

    name: str
    large: tuple[tuple[str, int], ...] = ()
    small: int = 2048
    prefill: int = 0

    def __str__(self) -> str:
        return f"roles {self.name}"

    def suffix(self, counts: Mapping[str, int]) -> str:
        """The replay policy suffix (``policy_names``) laying this mix over ``counts`` replicas per
        variant; empty when no rule applies (every variant below two replicas)."""
        parts: list[str] = []
        prefill = min(self.prefill, counts.get("standard", 0) // 2)
        if prefill:
            parts.append(f"@{PD}={prefill}:0:duet")
        groups = [f"{variant}:{counts[variant] // 2}x{budget}+{self.small}"
                  for variant, budget in self.large if counts.get(variant, 0) >= 2]
        if groups:
            parts.append(f"@{CHUNK}=" + ":".join(groups))
        return "".join(parts)

    def engines(self, variant: str, replicas: int, disaggregated: bool) -> list[EngineConfig]:
        """Each of a variant's ``replicas`` engines in order, as ``suffix`` lays them out (the
        prefill roles only where the fleet is ``disaggregated``: its routing has the P/D rule)."""
        large = dict(self.large).get(variant)
        half = replicas // 2
        budgets: list[int | None] = [None] * replicas
        if large is not None and replicas >= 2:
            budgets = [*([large] * half), *([self.small] * (replicas - half))]
        if not (disaggregated and variant == "standard" and self.prefill):
            return [EngineConfig(max_num_batched_tokens=b) for b in budgets]
        prefill = min(self.prefill, half)
        return [EngineConfig(EngineRole.PREFILL if i < prefill else EngineRole.BOTH, b, kv_connector=KV_CONNECTOR)
                for i, b in enumerate(budgets)]

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "large": dict(self.large), "small": self.small, "prefill": self.prefill,
                "rule": "each named variant's first n // 2 replicas at its large budget, the rest at small; "
                        "the standard's first min(prefill, n // 2) prefill-only (@pd=P:0:duet)"}


# Issue #36's tuned layout: standard 16,384 and fast 8,192 on the first half, 2,048 on the rest.
SPLIT = RoleMix("split", (("standard", 16384), ("fast", 8192)))
PD_SPLIT = RoleMix("pd+split", SPLIT.large, SPLIT.small, prefill=2)
ROLE_MIXES = {mix.name: mix for mix in (SPLIT, PD_SPLIT)}


def parse_role_mixes(text: str | None) -> tuple[RoleMix, ...]:
    """``split,pd+split`` -> those mixes (None or empty: none). Raises ValueError naming the known ones."""
    names = [n for n in (text or "").split(",") if n]
    if unknown := [n for n in names if n not in ROLE_MIXES]:
        raise ValueError(f"--roles {unknown[0]}: unknown role mix (known: {', '.join(ROLE_MIXES)})")
    return tuple(ROLE_MIXES[n] for n in dict.fromkeys(names))
