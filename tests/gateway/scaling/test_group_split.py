"""A variant's count split over its engine groups: Sainte-Laguë proportions of the configured
counts, exact at the configured total and its multiples, never taking a replica from a group as
the total grows, the first replica to a group that answers alone, so a variant with a prefill
group always keeps a decoder (and one of prefill and decode groups only gets one of each first)."""

from __future__ import annotations

import itertools

import pytest

from gateway.domain import EngineRole
from gateway.scaling import GroupShare, VariantNeed, split_replicas, with_groups
from gateway.scaling.group_split import first_total_for_every_group

BOTH, PREFILL, DECODE = EngineRole.BOTH, EngineRole.PREFILL, EngineRole.DECODE
# The committed W4A16 plan's standard variant (pd+split at 6 replicas): 2 prefill-only at 16,384,
# 1 both at 16,384, 3 both at 2,048.
PD_SPLIT_6 = (GroupShare(2, PREFILL), GroupShare(1, BOTH), GroupShare(3, BOTH))


@pytest.mark.parametrize("total, counts", [
    (0, (0, 0, 0)), (1, (0, 0, 1)), (2, (1, 0, 1)), (3, (1, 1, 1)), (4, (1, 1, 2)), (5, (2, 1, 2)),
    (6, (2, 1, 3)), (7, (2, 1, 4)), (8, (3, 1, 4)), (9, (3, 2, 4)), (10, (3, 2, 5)), (11, (4, 2, 5)),
    (12, (4, 2, 6)),
])
def test_the_w4a16_plans_groups_at_every_count_up_to_twice_the_plan(total: int, counts: tuple[int, ...]) -> None:
    """Worked by hand from the rule: the first replica to the largest both group (2,048), then
    each to the highest configured / (replicas + 1/2), a decoder and then the earlier group on ties."""
    assert split_replicas(PD_SPLIT_6, total) == counts


@pytest.mark.parametrize("shares, first", [
    ((GroupShare(3, PREFILL), GroupShare(1, BOTH)), (0, 1)),  # the largest group prefills only: not first
    ((GroupShare(2, PREFILL), GroupShare(2, DECODE)), (0, 1)),  # no both group: a decoder
    ((GroupShare(1, DECODE), GroupShare(1, BOTH)), (0, 1)),  # both answers alone; decode needs a prefiller
    ((GroupShare(2, BOTH), GroupShare(2, BOTH)), (1, 0)),  # equal: the earlier
    ((GroupShare(1, BOTH), GroupShare(4, BOTH)), (0, 1)),  # the larger
])
def test_the_first_replica_goes_to_the_largest_group_that_answers_alone(shares: tuple[GroupShare, ...],
                                                                         first: tuple[int, ...]) -> None:
    assert split_replicas(shares, 1) == first


def test_a_variant_of_prefill_and_decode_groups_only_gets_one_of_each_first() -> None:
    """Neither serves a request alone: its decoder first, then a prefill replica for it, though
    the proportions alone would give the larger decode group both."""
    shares = (GroupShare(1, PREFILL), GroupShare(4, DECODE))
    assert [split_replicas(shares, n) for n in (1, 2, 3, 5)] == [(0, 1), (1, 1), (1, 2), (1, 4)]
    assert split_replicas((GroupShare(3, DECODE), GroupShare(1, DECODE)), 2) == (2, 0)  # no prefill group: proportions


def mixes() -> list[tuple[GroupShare, ...]]:
    """Every mix of one to three groups of one to four replicas in any role, with a decoder."""
    found = []
    for size in (1, 2, 3):
        for counts in itertools.product(range(1, 5), repeat=size):
            for roles in itertools.product((BOTH, PREFILL, DECODE), repeat=size):
                if any(role is not PREFILL for role in roles):
                    found.append(tuple(GroupShare(c, r) for c, r in zip(counts, roles, strict=True)))
    return found


MIXES = mixes()


def test_over_every_small_mix_the_split_sums_grows_keeps_a_decoder_and_is_exact_at_multiples() -> None:
    assert len(MIXES) > 1000
    for shares in MIXES:
        configured = tuple(share.count for share in shares)
        before = (0,) * len(shares)
        for total in range(0, 3 * sum(configured) + 3):
            counts = split_replicas(shares, total)
            assert sum(counts) == total, (shares, total)
            assert all(now >= then for now, then in zip(counts, before, strict=True)), (shares, total)  # house-monotone
            if total:
                assert any(n for n, share in zip(counts, shares, strict=True) if share.decodes), (shares, total)
            if total >= 2 and {PREFILL, DECODE} <= {s.role for s in shares} and BOTH not in {s.role for s in shares}:
                assert {s.role for n, s in zip(counts, shares, strict=True) if n} >= {PREFILL, DECODE}, (shares, total)
            if total % sum(configured) == 0:
                assert counts == tuple(c * total // sum(configured) for c in configured), (shares, total)
            before = counts


def test_a_one_group_variant_gets_every_replica() -> None:
    assert [split_replicas((GroupShare(3, BOTH),), n) for n in (0, 1, 7)] == [(0,), (1,), (7,)]


@pytest.mark.parametrize("shares, total, error", [
    (PD_SPLIT_6, -1, "total -1"),
    ((GroupShare(0, BOTH), GroupShare(2, BOTH)), 3, "at least one replica"),
    ((), 2, "no group"),
])
def test_what_cannot_be_split_is_refused(shares: tuple[GroupShare, ...], total: int, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        split_replicas(shares, total)
    assert split_replicas((), 0) == ()


def test_the_fewest_replicas_at_which_every_group_has_one() -> None:
    assert first_total_for_every_group(PD_SPLIT_6) == 3
    assert first_total_for_every_group((GroupShare(1, PREFILL), GroupShare(9, BOTH))) == 6  # 9/5.5 < 1/0.5 only at 6
    assert first_total_for_every_group((GroupShare(4, BOTH),)) == 1


def test_a_variant_need_gets_its_groups_counts_only_when_it_has_several() -> None:
    need = VariantNeed("standard", (("chat", 1.0),), 2.5, 64, 1, 5)
    named = (("prefill-nixl-c16384", PD_SPLIT_6[0]), ("both-nixl-c16384", PD_SPLIT_6[1]), ("both-nixl-c2048", PD_SPLIT_6[2]))
    assert with_groups(need, named).groups == (("prefill-nixl-c16384", 2), ("both-nixl-c16384", 1), ("both-nixl-c2048", 2))
    assert with_groups(need, named[:1]) == need == with_groups(need, ())
