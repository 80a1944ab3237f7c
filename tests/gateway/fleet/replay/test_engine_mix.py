"""A variant's engines as it grows and shrinks: the engine an added replica takes, and which
replicas a shrink removes so that those left carry the mix wanted at the new count."""

from __future__ import annotations

from collections import Counter

import pytest

from gateway.fleet.capacity.roles import PD_SPLIT, SPLIT
from gateway.fleet.replay.engine_mix import added_engine, removal_by_mix
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
