"""How an autoscaled variant's replica count splits over its engine groups (issue #37): one
answer for the gauge's per-group series (``duet_desired_group_replicas``), the per-group
autoscalers' bounds (``gateway/deploy/autoscaling.py``) and the replay's autoscaled role mix
(``gateway/fleet/replay/engine_mix.py``), so that the deployed fleet holds the mix the replay
measured.

The groups' configured counts are the mix wanted at their sum. At any other total ``n`` the
groups share ``n`` in proportion to those counts, rounded by Sainte-Laguë's divisor method
(Webster's): replica after replica goes to the group whose configured count over its replicas
so far plus one half is highest. A divisor method is *house-monotone*: one more replica in the
variant never takes one from a group (no Alabama paradox, which largest-remainder rounding
has), so growing one replica at a time, as the replay does, and jumping straight to ``n``, as
Kubernetes does, agree, and a group's Deployment never shrinks while its variant grows. At
the configured total every group gets exactly its count (every quota is then whole).

The first replica goes to the largest group that serves a request alone (role ``both``; else
the largest ``decode`` group; config order breaks ties): so whenever ``n >= 1`` the variant has
a replica that writes answers, and prefill-only replicas are never all it has (a replayed day
lost 148 minutes with two prefill-only replicas and no decoder). A variant of ``prefill`` and
``decode`` groups and no ``both`` one serves a request only with one of each, so its second
replica goes to its largest prefill group. Ties between later replicas go to a group that
decodes, then to the earlier group. Moving groups' first replicas to the front of the sequence
keeps the configured total exact: each of those groups gets a replica at that total anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from gateway.domain import EngineRole
from gateway.scaling.desired import VariantNeed


@dataclass(frozen=True, slots=True)
class GroupShare:
    """One engine group of a variant, as the split reads it: ``count`` replicas at the
    configured total (at least one), each in ``role``."""

    count: int
    role: EngineRole = EngineRole.BOTH

    @property
    def decodes(self) -> bool:
        """Whether the group's replicas write answers (``both`` or ``decode``)."""
        return self.role is not EngineRole.PREFILL


def split_replicas(shares: Sequence[GroupShare], total: int) -> tuple[int, ...]:
    """Each group's replicas (in ``shares``' order, summing to ``total``) when the variant of
    ``shares`` runs ``total`` replicas: the module docstring's rule. Raises ValueError for a
    negative total, a group of no replicas, or replicas to give and no group."""
    if total < 0:
        raise ValueError(f"total {total}: a replica count is >= 0")
    if any(share.count < 1 for share in shares):
        raise ValueError(f"{[share.count for share in shares]}: every group has at least one replica configured")
    if total and not shares:
        raise ValueError(f"total {total}: no group to give replicas to")
    counts = [0] * len(shares)
    opening = _opening(shares)
    for seat in range(total):
        counts[opening[seat] if seat < len(opening) else _next(shares, counts)] += 1
    return tuple(counts)


def with_groups(need: VariantNeed, groups: Sequence[tuple[str, GroupShare]]) -> VariantNeed:
    """``need`` with its count split over ``groups`` ((name, share) in config order) when there
    are several; unchanged for a variant of one engine (its Deployment is the variant's)."""
    if len(groups) < 2:
        return need
    counts = split_replicas([share for _, share in groups], need.desired)
    return replace(need, groups=tuple((name, n) for (name, _), n in zip(groups, counts, strict=True)))


def first_total_for_every_group(shares: Sequence[GroupShare]) -> int:
    """The smallest total at which every group has a replica (at most their configured sum)."""
    total = 0
    while total < sum(share.count for share in shares) and not all(split_replicas(shares, total)):
        total += 1
    return total


def _opening(shares: Sequence[GroupShare]) -> list[int]:
    """The groups that get the variant's first replicas, in order: the largest ``both`` group,
    else the largest group that decodes and then, with no ``both`` group, the largest prefill
    group (a decode replica needs one to prefill for it); the earliest among equals."""
    if not shares:
        return []
    if both := _largest(shares, lambda share: share.role is EngineRole.BOTH):
        return both
    first = _largest(shares, lambda share: share.decodes) or _largest(shares, lambda share: True)
    return first + [i for i in _largest(shares, lambda share: share.role is EngineRole.PREFILL) if i not in first]


def _largest(shares: Sequence[GroupShare], chosen: Callable[[GroupShare], bool]) -> list[int]:
    """[the index of the largest of ``shares`` that ``chosen`` takes, the earliest among equals],
    or [] when it takes none."""
    candidates = [i for i, share in enumerate(shares) if chosen(share)]
    return [max(candidates, key=lambda i: (shares[i].count, -i))] if candidates else []


def _next(shares: Sequence[GroupShare], counts: Sequence[int]) -> int:
    """The group with the highest Sainte-Laguë priority, configured / (replicas + 1/2); a group
    that decodes, then the earliest, among equals."""
    return max(range(len(shares)), key=lambda i: (Fraction(2 * shares[i].count, 2 * counts[i] + 1),
                                                  shares[i].decodes, -i))
