"""The router's answer: each plugin's word on each candidate, and the decision (the variant, the
replicas ranked, the predictions, and why), or what blocked a request none survived. Plain
immutable data, like ``gateway.domain``'s vocabulary, which it builds on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.domain import Prediction, Replica


@dataclass(frozen=True, slots=True)
class Verdict:
    """One plugin's word on one candidate: kept/rejected by a filter, or a score in [0, 1]."""

    plugin: str
    replica_id: str
    passed: bool
    score: float | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Blocker:
    """The filter that rejected most candidates of a request none survived: its instance name
    (as configured) and its plugin type (what a refusal's status follows from)."""

    name: str
    type: str


# A decision with no candidate at all (a pin naming a variant without replicas) names this type.
PINNED_VARIANT = "pinned-variant"


@dataclass(frozen=True, slots=True)
class Decision:
    """The router's answer: the variant chosen, replicas ranked (head first), and why.
    ``blocked_by``: when ``ranked`` is empty, what blocked the request. ``prefill_for``: the
    ranked decode-role replicas, each with the prefill replica whose KV it decodes (a split
    request, ``gateway.routing.pd``); every other ranked replica serves the request whole."""

    model: str
    variant: str | None
    ranked: tuple[Replica, ...]
    reason: str
    meets_budget: bool
    predictions: dict[str, Prediction] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()
    profile: str = ""
    blocked_by: Blocker | None = None
    prefill_for: Mapping[str, Replica] = field(default_factory=dict)
