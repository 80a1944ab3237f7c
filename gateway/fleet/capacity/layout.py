"""A variant's deployment beyond its replica count: the GPUs one replica spans (tensor
parallelism) and its chunk budget (vLLM's ``--max-num-batched-tokens``). A layout gives each
variant one; ``duet plan`` searches the count for every layout it may try.

Who may try which (``LayoutSpace``): Duet any combination of each variant's options (a fast W4A16
variant on one GPU beside a standard bf16 one on four), and each TP combination with each engine
role mix (``roles.py``: chunk-budget groups and prefill replicas over the variants' replicas); a
baseline one uniform configuration for
all its replicas (the same TP and chunk budget on both variants: what a team without a per-variant
planner deploys); an all-standard fleet any of the standard variant's own. A TP size is an option
only where the variant's profile fits (``serving.sim.parallel``'s memory check).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.fleet.capacity.roles import RoleMix
from gateway.fleet.world.pricing import H100_USD_PER_GPU_HOUR, chargeback_price
from gateway.fleet.world.replica_sets import ReplicaSet, VariantSpec
from gateway.flow import ReplicaCost
from serving.launch import load_profiles
from serving.sim.parallel import at_size, sizes_that_fit
from serving.sim.profile import load_profile

VARIANTS = ("standard", "fast")


@dataclass(frozen=True, slots=True)
class Deployment:
    """One variant's replicas: ``tp`` GPUs each, chunk budget ``chunk`` (None: the profile's)."""

    tp: int
    chunk: int | None = None

    def __str__(self) -> str:
        return f"TP{self.tp}" + ("" if self.chunk is None else f" chunk {self.chunk}")

    def as_dict(self) -> dict[str, int | None]:
        return {"tp": self.tp, "chunk": self.chunk}


@dataclass(frozen=True, slots=True)
class Layout:
    """Each variant's deployment; ``standard`` alone for an all-standard fleet (``fast`` None);
    ``roles``: the engine roles laid over the replicas (None: every replica as its deployment)."""

    standard: Deployment
    fast: Deployment | None
    roles: RoleMix | None = None

    @property
    def deployments(self) -> dict[str, Deployment]:
        return {name: d for name, d in (("standard", self.standard), ("fast", self.fast)) if d is not None}

    @property
    def uniform(self) -> bool:
        return self.roles is None and (self.fast is None or self.fast == self.standard)

    def __str__(self) -> str:
        return ", ".join([*(f"{name} {d}" for name, d in self.deployments.items()), *([str(self.roles)] if self.roles else [])])

    def suffix(self, counts: Mapping[str, int]) -> str:
        """The replay policy suffix of the roles over a fleet of ``counts`` ("" without roles)."""
        return "" if self.roles is None else self.roles.suffix(counts)

    @property
    def key(self) -> tuple[int | str, ...]:
        """For a stable order: each variant's TP size and chunk budget (0: the profile's), then the roles."""
        return (*(n for d in self.deployments.values() for n in (d.tp, d.chunk or 0)), self.roles.name if self.roles else "")

    def as_dict(self) -> dict[str, dict[str, int | None]]:
        return {name: d.as_dict() for name, d in self.deployments.items()}


@dataclass(frozen=True, slots=True)
class LayoutSpace:
    """The options per variant: TP sizes and chunk budgets (None: the profile's own), and the
    engine role mixes Duet may lay over its replicas."""

    tp: Mapping[str, tuple[int, ...]]
    chunk: Mapping[str, tuple[int | None, ...]]
    roles: tuple[RoleMix, ...] = ()

    def deployments(self, variant: str) -> list[Deployment]:
        return [Deployment(t, c) for t, c in itertools.product(self.tp[variant], self.chunk[variant])]

    def for_duet(self) -> list[Layout]:
        """Every combination of the variants' own options, then each TP combination (at the
        profiles' budgets, which a role mix overrides where it applies) with each role mix."""
        combos = [Layout(s, f) for s, f in itertools.product(self.deployments("standard"), self.deployments("fast"))]
        tps = itertools.product(self.tp["standard"], self.tp["fast"])
        return combos + [Layout(Deployment(s), Deployment(f), mix) for (s, f), mix in itertools.product(tps, self.roles)]

    def uniform(self) -> list[Layout]:
        """One configuration for every replica: the options both variants share."""
        fast = set(self.deployments("fast"))
        return [Layout(d, d) for d in self.deployments("standard") if d in fast]

    def standard_only(self) -> list[Layout]:
        return [Layout(d, None) for d in self.deployments("standard")]

    def as_dict(self) -> dict[str, dict[str, list[int | None]]]:
        return {name: {"tp": list(self.tp[name]), "chunk": list(self.chunk[name])} for name in VARIANTS}

    def roles_dict(self) -> list[dict[str, object]]:
        return [mix.as_dict() for mix in self.roles]


def own_tp(replica_set: ReplicaSet, variant: str) -> int:
    """The TP size a variant's profile was measured at (its replica's GPUs as shipped): the
    profile's tensor-parallel facts, else its launch profile's GPUs, else one (a test set)."""
    name = _spec(replica_set, variant).profile
    profile = load_profile(name)
    if profile.parallel is not None:
        return profile.parallel.tensor_parallel_size
    launch = load_profiles().get(name)
    return 1 if launch is None else max(1, launch.gpus)


def space(replica_set: ReplicaSet, tp: Mapping[str, Sequence[int]], chunk: Mapping[str, Sequence[int]],
          roles: tuple[RoleMix, ...] = ()) -> LayoutSpace:
    """The layouts ``--tp``, ``--chunk`` and ``--roles`` allow (a variant not named: its profile's
    own size; its profile's own budget is always an option, vLLM's default, beside those named).
    Raises ValueError naming the variant when a size does not fit or is unknown."""
    sizes: dict[str, tuple[int, ...]] = {}
    for name in VARIANTS:
        profile = load_profile(_spec(replica_set, name).profile)
        asked = tuple(sorted(set(tp.get(name, ())))) or (own_tp(replica_set, name),)
        fits = sizes_that_fit(profile) or (own_tp(replica_set, name),)
        if refused := [n for n in asked if n not in fits]:
            raise ValueError(f"--tp {name}={refused[0]}: '{profile.name}' fits at TP {', '.join(map(str, fits))} only")
        sizes[name] = asked
    budgets = {name: (None, *sorted(set(chunk.get(name, ())))) for name in VARIANTS}
    return LayoutSpace(sizes, budgets, roles)


def laid_out(replica_set: ReplicaSet, layout: Layout) -> ReplicaSet:
    """``replica_set`` with each variant deployed as ``layout`` says: its profile derived at the
    TP size, its replica cost that many GPUs, its chargeback from both. The profiles' own layout
    returns the set unchanged (its committed prices with it)."""
    if all(d == Deployment(own_tp(replica_set, n)) for n, d in layout.deployments.items()):
        return replica_set
    return dataclasses.replace(replica_set, variants=tuple(
        _deployed(v, layout.deployments.get(v.name)) for v in replica_set.variants))


def _deployed(variant: VariantSpec, deployment: Deployment | None) -> VariantSpec:
    """The variant as ``deployment`` says (None: as it is, for a fleet that runs none of it)."""
    if deployment is None:
        return variant
    profile = at_size(load_profile(variant.profile), deployment.tp)
    cost = ReplicaCost(deployment.tp, H100_USD_PER_GPU_HOUR)
    price = chargeback_price(profile.with_engine(max_num_batched_tokens=deployment.chunk), cost)
    return dataclasses.replace(variant, profile=profile.name, price=price, cost=cost,
                               max_num_batched_tokens=deployment.chunk)


def _spec(replica_set: ReplicaSet, variant: str) -> VariantSpec:
    return next(v for v in replica_set.variants if v.name == variant)


def parse_options(text: str | None, flag: str) -> dict[str, tuple[int, ...]]:
    """``fast=1,2,4 standard=4`` (or the same with ``;``) -> {variant: sizes}; None -> {}.
    Raises ValueError naming the flag."""
    options: dict[str, tuple[int, ...]] = {}
    variant: str | None = None
    for word in (text or "").replace(";", " ").replace(",", " ").split():
        name, equals, value = word.rpartition("=")
        if equals:
            if name not in VARIANTS:
                raise ValueError(f"{flag} {word}: the variant is one of {', '.join(VARIANTS)}")
            variant = name
        if variant is None or not value.isdigit() or int(value) < 1:
            raise ValueError(f"{flag} {text}: write VARIANT=N[,N...] (e.g. fast=1,2,4 standard=4)")
        options[variant] = (*options.get(variant, ()), int(value))
    return options


def own_layout(replica_set: ReplicaSet) -> Layout:
    """Every variant at its profile's own size and chunk budget: the layout ``duet plan`` sized before TP."""
    return Layout(Deployment(own_tp(replica_set, "standard")), Deployment(own_tp(replica_set, "fast")))


ROLES = ("duet", "baseline", "all-standard")


def layouts_for(role: str, layouts: LayoutSpace, first: Layout) -> list[Layout]:
    """The layouts a policy of ``role`` (``ROLES``) may try, ``first`` (or its standard half)
    first: a cheap fleet found early caps the search of the others."""
    chosen = {"duet": layouts.for_duet, "baseline": layouts.uniform, "all-standard": layouts.standard_only}[role]()
    return sorted(chosen, key=lambda layout: (layout.standard != first.standard or (
        layout.fast is not None and layout.fast != first.fast) or layout.roles is not None, layout.key))
