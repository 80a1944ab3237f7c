"""Which engines a variant's replicas carry as an autoscaler grows and shrinks it (issue #37).

A variant's engine groups (``duet plan --roles`` lays them over its fleet: large-budget,
small-budget and prefill-only replicas, ``gateway.fleet.capacity.roles``) say which engines its
replicas carry at the count they were planned for. At any other count the replicas split over
the same groups as the deployed gauge splits them, ``gateway.scaling.group_split`` (one
function: Sainte-Laguë proportions, the first replica to a group that answers alone):
``by_groups`` makes that the mix wanted at each count. A replica keeps the engine it started
with, so the mix is held by choosing which engine an added replica starts with
(``added_engine``) and which replicas a shrink removes (``removal_by_mix``). Since the split
never takes a replica from a group as the count grows, the replicas a run holds after growing
or shrinking to ``n`` are exactly the split at ``n``, as each group's own autoscaler would hold
them. Without groups, every replica runs the launch profile's engine, removed in Kubernetes' order.

On Kubernetes a Deployment's pods share one pod template, so replicas on different engines
(different vLLM flags) are different Deployments: ``duet deploy render`` writes one per engine
group, each with its own autoscaler on the gauge's per-group series
(``duet_desired_group_replicas``, the split of the variant's count). Removing "a surplus
prefill replica" is scaling the prefill Deployment down by one, and within it the ReplicaSet
ranks the pods itself (``autoscale.removal_order``), as here. (The
``controller.kubernetes.io/pod-deletion-cost`` annotation, beta since Kubernetes 1.22, only
hints which of one Deployment's pods go first; those pods are identical, so it cannot hold a
mix.) ``AutoscaledRun.deployment_per_variant`` replays what one Deployment per variant would do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence

from gateway.autoscaling import GroupShare, split_replicas
from gateway.flow import EngineConfig

# A variant's name and a replica count -> the engines that many replicas should carry (a multiset;
# its order does not matter): ``by_groups``.
WantedEngines = Callable[[str, int], Sequence[EngineConfig]]
# A variant's engine groups: (engine, replicas at the planned count), in the order the config writes them.
EngineGroups = Sequence[tuple[EngineConfig, int]]


def groups_of(engines: Sequence[EngineConfig]) -> list[tuple[EngineConfig, int]]:
    """Replicas' ``engines`` as engine groups: each engine with its count, in order of first
    appearance (as ``fleet_config.role_groups`` writes them into a config)."""
    counts: dict[EngineConfig, int] = {}
    for engine in engines:
        counts[engine] = counts.get(engine, 0) + 1
    return list(counts.items())


def by_groups(groups: Mapping[str, EngineGroups]) -> WantedEngines:
    """The engines a variant's ``n`` replicas should carry: its ``groups`` split over ``n`` by
    ``split_replicas``, each group's engine that many times, in the groups' order; a variant with
    no groups, the launch profile's engine (``EngineConfig()``) ``n`` times."""
    def wanted(variant: str, replicas: int) -> list[EngineConfig]:
        mine = groups.get(variant) or ()
        if not mine:
            return [EngineConfig()] * replicas
        counts = split_replicas([GroupShare(count, engine.role) for engine, count in mine], replicas)
        return [engine for (engine, _), n in zip(mine, counts, strict=True) for _ in range(n)]
    return wanted


def added_engine(wanted: Sequence[EngineConfig], running: Sequence[EngineConfig]) -> EngineConfig:
    """The engine a replica added to ``running`` starts with, ``wanted`` (not empty) being the mix
    at the new count: the first wanted engine the running replicas lack, else the last wanted one."""
    missing = list(wanted)
    for engine in running:
        if engine in missing:
            missing.remove(engine)
    return missing[0] if missing else wanted[-1]


def removal_by_mix(engines: Sequence[EngineConfig], wanted: Sequence[EngineConfig]) -> list[int]:
    """The order in which to remove replicas so that those left carry ``wanted`` as nearly as
    possible: indices into ``engines``, which are the replicas' engines in Kubernetes' removal
    order. First the replicas whose engine and role are both beyond what ``wanted`` holds, then
    those whose engine is beyond it but whose role a wanted engine left unmatched has (a
    ``both`` replica at the wrong chunk budget still decodes; a prefill-only one kept alone would
    leave the variant no decoder), then the rest; Kubernetes' order within each, so of one engine
    the replicas go in Kubernetes' order. Removing the first ``len(engines) - len(wanted)`` removes
    only replicas beyond ``wanted``: those left carry as many of the wanted engines as any choice could."""
    exact = _beyond(engines, wanted, lambda engine: engine)
    matched = Counter(e for i, e in enumerate(engines) if i not in exact)
    unmatched = list((Counter(wanted) - matched).elements())
    surplus = sorted(exact)
    role = {surplus[j] for j in _beyond([engines[i] for i in surplus], unmatched, lambda engine: engine.role)}
    # Stable: Kubernetes' order holds within each tier.
    return sorted(range(len(engines)), key=lambda i: (i not in role, i not in exact))


def _beyond(engines: Sequence[EngineConfig], wanted: Sequence[EngineConfig],
            key: Callable[[EngineConfig], Hashable]) -> set[int]:
    """Indices of ``engines`` (in removal order) beyond what ``wanted`` holds of their ``key``: of
    each key, the first ones in removal order, so the last ones, which Kubernetes keeps longest, stay."""
    spare = Counter(key(e) for e in engines) - Counter(key(e) for e in wanted)
    beyond: set[int] = set()
    for i, engine in enumerate(engines):
        if spare[key(engine)] > 0:
            spare[key(engine)] -= 1
            beyond.add(i)
    return beyond
