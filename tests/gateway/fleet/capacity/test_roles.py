"""Role mixes: the replay suffix a mix lays over a fleet, by rule over its counts."""

from __future__ import annotations

import pytest

from gateway.fleet.capacity.roles import PD_SPLIT, SPLIT, RoleMix, parse_role_mixes
from gateway.fleet.replay.policy_names import parse_policy_name


@pytest.mark.parametrize(("mix", "counts", "suffix"), [
    # issue #36's layout, on its fleet of four standard and two fast replicas
    (PD_SPLIT, {"standard": 4, "fast": 2}, "@pd=2:0:duet@chunk=standard:2x16384+2048:fast:1x8192+2048"),
    (SPLIT, {"standard": 4, "fast": 2}, "@chunk=standard:2x16384+2048:fast:1x8192+2048"),
    # half the replicas (rounded down) at the large budget, the prefill ones among them
    (PD_SPLIT, {"standard": 3, "fast": 5}, "@pd=1:0:duet@chunk=standard:1x16384+2048:fast:2x8192+2048"),
    (PD_SPLIT, {"standard": 8, "fast": 0}, "@pd=2:0:duet@chunk=standard:4x16384+2048"),
    # a variant of one replica keeps its budget; no standard pair, no prefill replica
    (PD_SPLIT, {"standard": 1, "fast": 4}, "@chunk=fast:2x8192+2048"),
    (SPLIT, {"standard": 1, "fast": 1}, ""),
])
def test_a_mix_lays_groups_over_any_count(mix: RoleMix, counts: dict[str, int], suffix: str) -> None:
    assert mix.suffix(counts) == suffix
    if suffix:  # what the replay reads, with every replica given a budget that fits its count
        layout = parse_policy_name("duet" + suffix).chunk
        assert layout is not None
        budgets = layout.budgets(counts, "duet")
        assert all(len(budgets[v]) == n for v, n in counts.items())


def test_mixes_parse_by_name_and_an_unknown_one_is_refused() -> None:
    assert parse_role_mixes("split,pd+split,split") == (SPLIT, PD_SPLIT)
    assert parse_role_mixes(None) == ()
    with pytest.raises(ValueError, match="--roles taichi: unknown role mix"):
        parse_role_mixes("taichi")


def test_a_mix_lays_its_engines_over_a_count() -> None:
    from gateway.fleet.capacity.roles import KV_CONNECTOR
    from gateway.flow import EngineConfig, EngineRole

    assert [e.max_num_batched_tokens for e in SPLIT.engines("fast", 3, disaggregated=False)] == [8192, 2048, 2048]
    assert SPLIT.engines("standard", 1, disaggregated=False) == [EngineConfig()]  # one replica keeps the profile's
    pd = PD_SPLIT.engines("standard", 4, disaggregated=True)
    assert [e.role for e in pd] == [EngineRole.PREFILL] * 2 + [EngineRole.BOTH] * 2
    assert all(e.kv_connector == KV_CONNECTOR for e in pd)
    assert PD_SPLIT.engines("standard", 4, disaggregated=False)[0].role is EngineRole.BOTH  # no P/D routing
