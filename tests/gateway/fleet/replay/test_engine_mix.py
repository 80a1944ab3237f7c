"""A variant's engines as it grows and shrinks: the engine an added replica takes, and which
replicas a shrink removes so that those left carry the mix wanted at the new count; with the
mix wanted as the deployed gauge splits a variant's engine groups (``by_groups``), the replicas
a run holds at any count are exactly that split, however it got there."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gateway.autoscaling import GroupShare, split_replicas
from gateway.fleet.capacity.roles import PD_SPLIT, SPLIT
from gateway.fleet.replay.engine_mix import added_engine, by_groups, groups_of, removal_by_mix
from gateway.flow import EngineConfig, EngineRole

P16 = EngineConfig(EngineRole.PREFILL, 16384, kv_connector="NixlConnector")
B16 = EngineConfig(EngineRole.BOTH, 16384, kv_connector="NixlConnector")
B2 = EngineConfig(EngineRole.BOTH, 2048, kv_connector="NixlConnector")
B = EngineConfig(EngineRole.BOTH, kv_connector="NixlConnector")


def test_an_added_replica_takes_the_engine_the_mix_lacks_at_the_new_count() -> None:
    running = SPLIT.engines("fast", 3, disaggregated=False)
    assert added_engine(SPLIT.engines("fast", 4, False), running).max_num_batched_tokens == 8192  # two and two
    assert added_engine(SPLIT.engines("fast", 2, False), [EngineConfig()]).max_num_batched_tokens == 8192
    assert added_engine(SPLIT.engines("standard", 1, False), []) == EngineConfig()  # one keeps the profile's
    # every wanted engine already running: the last wanted one
    assert added_engine([B2, B2], [B2, B2, B2]) == B2


def kept(engines: list[EngineConfig], wanted: list[EngineConfig]) -> Counter[EngineConfig]:
    ranks = removal_by_mix(engines, wanted)
    return Counter(engines[i] for i in ranks[len(engines) - len(wanted):])


@pytest.mark.parametrize(("engines", "target"), [
    # Kubernetes' order (first removed first): the prefill replicas would go last and be all that stays
    ([B2, B2, B16, B16, P16, P16], 4),
    ([B2, B2, B16, B16, B2, P16, P16, B16], 3),
    ([P16, P16, B2, B2, B16, B16], 2),
])
def test_a_shrinking_pd_split_variant_keeps_the_mix_wanted_at_the_new_count(engines, target) -> None:
    wanted = PD_SPLIT.engines("standard", target, disaggregated=True)
    assert kept(engines, wanted) == Counter(wanted)


def test_surplus_engines_go_first_in_kubernetes_order_among_them() -> None:
    # wanted at 4: two prefill at 16384, two both at 2048; the running B16s are the surplus
    engines = [B2, B16, P16, B16, B2, P16]
    wanted = PD_SPLIT.engines("standard", 4, disaggregated=True)
    assert removal_by_mix(engines, wanted)[:2] == [1, 3]  # the B16s, the first-ranked first
    assert removal_by_mix(engines, wanted)[2:] == [0, 2, 4, 5]  # the rest keep Kubernetes' order


def test_a_surplus_engine_whose_role_is_wanted_stays_before_one_whose_role_is_not() -> None:
    # wanted at 1: one 'both' replica on the profile's budget, which none runs: the decoder at
    # another budget is kept over a prefill-only replica, which alone would leave no decoder
    # (Kubernetes' order alone would keep the prefill replica: it ranks last)
    engines = [B16, B2, P16]
    assert removal_by_mix(engines, PD_SPLIT.engines("standard", 1, disaggregated=True)) == [0, 2, 1]


def test_without_surplus_the_order_is_kubernetes_own() -> None:
    assert removal_by_mix([B2, B2, B2], [B2, B2]) == [0, 1, 2]
    assert removal_by_mix([B, P16, B16], []) == [0, 1, 2]  # scaled to zero


def test_groups_are_counted_in_the_order_their_engines_first_appear() -> None:
    assert groups_of(PD_SPLIT.engines("standard", 6, disaggregated=True)) == [(P16, 2), (B16, 1), (B2, 3)]
    assert groups_of([]) == []


def test_the_mix_wanted_is_the_deployed_split_of_the_groups() -> None:
    wanted = by_groups({"standard": [(P16, 2), (B16, 1), (B2, 3)]})
    assert Counter(wanted("standard", 4)) == Counter({P16: 1, B16: 1, B2: 2})  # split_replicas: (1, 1, 2)
    assert wanted("standard", 1) == [B2]  # the largest group that answers alone, never the prefill one
    assert wanted("standard", 0) == []
    assert wanted("fast", 3) == [EngineConfig()] * 3  # no groups: the launch profile's engine


# Engines for the mixes below: prefill-only, decode-only and both at two budgets.
D16 = EngineConfig(EngineRole.DECODE, 16384, kv_connector="NixlConnector")
ENGINES = (P16, B16, B2, D16)


def random_mix(draw: random.Random) -> list[tuple[EngineConfig, int]]:
    """One to four groups of distinct engines, one to five replicas each, at least one decoding."""
    while True:
        engines = draw.sample(ENGINES, draw.randint(1, len(ENGINES)))
        if any(engine.decodes for engine in engines):
            return [(engine, draw.randint(1, 5)) for engine in engines]


def test_growing_and_shrinking_by_the_replays_rules_always_lands_on_the_split() -> None:
    """The replay adds one replica at a time (``added_engine``) and shrinks straight to the
    target (``removal_by_mix``, the first ``len - target`` removed); over 200 mixes and random
    walks of the count, what it holds after each step is what each group's autoscaler holds:
    ``split_replicas`` of the groups at that count."""
    draw = random.Random(37)
    for _ in range(200):
        groups = random_mix(draw)
        wanted = by_groups({"v": groups})
        shares = [GroupShare(count, engine.role) for engine, count in groups]
        running = wanted("v", sum(count for _, count in groups))  # the fleet as configured
        for _ in range(30):
            target = draw.randint(0, 3 * sum(count for _, count in groups))
            while len(running) < target:
                running.append(added_engine(wanted("v", len(running) + 1), running))
            if len(running) > target:
                shuffled = draw.sample(running, len(running))  # any Kubernetes order among the replicas
                order = removal_by_mix(shuffled, wanted("v", target))
                running = [shuffled[i] for i in order[len(running) - target:]]
            held = Counter(running)
            assert tuple(held[engine] for engine, _ in groups) == split_replicas(shares, target), (groups, target)
