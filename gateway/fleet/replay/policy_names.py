"""A replay policy's name: a policy file (``duet``, ``llm-d-default``, ...) and the engine layout
its fleet runs, as suffixes, each at most once, in any order:

- ``@pd=P:D[+F]:RULE``: prefill/decode roles and the split rule (``setup.pd_config``);
- ``@chunk=N``: every replica of every variant at chunk budget N (vLLM's
  ``--max-num-batched-tokens``): a uniform configuration, what a baseline gets;
- ``@chunk=VARIANT:GROUPS[:VARIANT:GROUPS...]``: per variant, its replicas in order, GROUPS
  being ``[Kx]N`` joined by ``+`` (K replicas at N; the last group without K takes the rest):
  ``duet@chunk=standard:2x16384+2048:fast:2048`` runs two standard replicas at 16,384 tokens
  and the other two at 2,048, and the fast ones at 2,048 (TaiChi's heterogeneous budgets).
  A variant not named keeps its profile's budget. Variants are separated by ``:``, not ``,``:
  a comma separates policies in ``--policies``.

The budgets go into each replica's ``engine`` section, where the replay's simulated engines and
the router both read them (``gateway.routing.roles.chunk_budget``): what the operator configured,
no oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.flow import ConfigError

PD, CHUNK = "pd", "chunk"
SUFFIXES = (PD, CHUNK)


class PolicyNameError(ConfigError, ValueError):
    """A policy name whose suffix cannot be read or does not fit the fleet; ``path`` names the
    policy and the part (``duet@chunk=standard:9x2048 @chunk.standard``). A ValueError too, so
    the replay's commands report it like their other bad arguments."""


@dataclass(frozen=True, slots=True)
class ChunkGroup:
    """``count`` replicas (None: the rest of the variant's) at ``budget`` tokens per step."""

    count: int | None
    budget: int


@dataclass(frozen=True, slots=True)
class ChunkLayout:
    """Chunk budgets: one for every replica (``uniform``), or groups per named variant."""

    uniform: int | None = None
    variants: tuple[tuple[str, tuple[ChunkGroup, ...]], ...] = ()

    def budgets(self, counts: Mapping[str, int], where: str) -> dict[str, list[int | None]]:
        """variant -> each replica's budget in order (None: the profile's), for a fleet of
        ``counts`` replicas per variant; refuses variants it lacks and groups that do not fit."""
        if self.uniform is not None:
            return {variant: [self.uniform] * n for variant, n in counts.items()}
        budgets: dict[str, list[int | None]] = {variant: [None] * n for variant, n in counts.items()}
        for variant, groups in self.variants:
            path = f"{where} @chunk.{variant}"
            if variant not in counts:
                raise PolicyNameError(path, f"no variant '{variant}' in the fleet (variants: {', '.join(counts)})")
            budgets[variant] = _spread(groups, counts[variant], path)
        return budgets


@dataclass(frozen=True, slots=True)
class PolicyName:
    """``base`` (a policy file) with its engine suffixes, each as written (None: absent)."""

    base: str
    pd: str | None = None
    chunk: ChunkLayout | None = None


def parse_policy_name(policy: str) -> PolicyName:
    """``policy`` split into its policy file and suffixes; a suffix not known, repeated, empty or
    malformed raises ``PolicyNameError`` naming it."""
    base, *suffixes = policy.split("@")
    if not base:
        raise PolicyNameError(policy, "no policy before '@'")
    found: dict[str, str] = {}
    for suffix in suffixes:
        key, equals, value = suffix.partition("=")
        if key not in SUFFIXES or not equals:
            raise PolicyNameError(f"{policy} @{suffix}", f"unknown suffix (known: {', '.join(f'@{s}=' for s in SUFFIXES)})")
        if key in found:
            raise PolicyNameError(f"{policy} @{key}", "given twice")
        if not value:
            raise PolicyNameError(f"{policy} @{key}", "empty")
        found[key] = value
    chunk = found.get(CHUNK)
    return PolicyName(base, found.get(PD), None if chunk is None else parse_chunk_layout(chunk, policy))


def parse_chunk_layout(text: str, where: str = "") -> ChunkLayout:
    """``N`` or ``VARIANT:GROUPS[:VARIANT:GROUPS...]`` (see the module's docstring)."""
    parts = text.split(":")
    if len(parts) == 1:
        return ChunkLayout(uniform=_budget(parts[0], f"{where} @chunk"))
    if len(parts) % 2:
        raise PolicyNameError(f"{where} @chunk", f"'{text}': N, or VARIANT:GROUPS pairs separated by ':'")
    variants: list[tuple[str, tuple[ChunkGroup, ...]]] = []
    for variant, groups in zip(parts[::2], parts[1::2], strict=True):
        path = f"{where} @chunk.{variant}"
        if not variant or variant[0].isdigit():
            raise PolicyNameError(path, f"'{variant}' is not a variant's name")
        if variant in dict(variants):
            raise PolicyNameError(path, "named twice")
        variants.append((variant, _groups(groups, path)))
    return ChunkLayout(variants=tuple(variants))


def _groups(text: str, path: str) -> tuple[ChunkGroup, ...]:
    groups: list[ChunkGroup] = []
    for item in text.split("+"):
        count, x, budget = item.rpartition("x")
        if x and not (count.isdigit() and int(count) > 0):
            raise PolicyNameError(path, f"'{item}': K replicas as a positive whole number, KxN")
        groups.append(ChunkGroup(int(count) if x else None, _budget(budget, path)))
    if any(g.count is None for g in groups[:-1]):
        raise PolicyNameError(path, f"'{text}': only the last group may leave out its count (it takes the rest)")
    return tuple(groups)


def _budget(text: str, path: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise PolicyNameError(path, f"'{text}' is not a chunk budget (a positive whole number of tokens)")
    return int(text)


def _spread(groups: tuple[ChunkGroup, ...], replicas: int, path: str) -> list[int | None]:
    """Each of a variant's ``replicas`` replicas' budget, the groups taking them in order."""
    named = sum(g.count or 0 for g in groups)
    rest = replicas - named
    open_ended = groups[-1].count is None
    if rest < 0 or (open_ended and rest == 0) or (not open_ended and rest):
        says = f"{named} replicas and the rest" if open_ended else f"{named} replicas"
        raise PolicyNameError(path, f"the groups name {says}; the variant has {replicas}")
    budgets: list[int | None] = []
    for group in groups:
        budgets += [group.budget] * (rest if group.count is None else group.count)
    return budgets
