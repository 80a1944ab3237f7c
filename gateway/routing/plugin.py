"""The routing framework's four interfaces, after llm-d's scheduler.

A routing profile runs: every Filter on every candidate -> the Predictor on survivors -> every
Scorer (weighted) -> the Objective, which orders the variants. All of it is pure and synchronous:
plain data in, plain data out, no I/O, so a decision can be unit-tested and replayed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from gateway.domain import Candidate, Prediction, RequestProfile


@dataclass(frozen=True, slots=True)
class Option:
    """A candidate that survived the filters, with its prediction and combined score in [0, 1]."""

    candidate: Candidate
    prediction: Prediction
    score: float


@dataclass(frozen=True, slots=True)
class VariantOrder:
    """An objective's answer: variants best-first, the reason, and whether the head meets the budget."""

    variants: tuple[str, ...]
    reason: str
    meets_budget: bool


class Filter(Protocol):
    """Keeps or rejects one candidate. Returns (kept, reason)."""

    name: str
    type: ClassVar[str]

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]: ...


class Predictor(Protocol):
    """Predicts TTFT, time per output token and end-to-end latency of a request on a candidate."""

    name: str
    type: ClassVar[str]

    def predict(self, request: RequestProfile, candidate: Candidate) -> Prediction: ...


class Scorer(Protocol):
    """Scores a candidate in [0, 1]; higher is better. Used to rank replicas within a variant."""

    name: str
    type: ClassVar[str]

    def score(self, request: RequestProfile, candidate: Candidate, prediction: Prediction) -> float: ...


class PoolScorer(Scorer, Protocol):
    """A scorer whose value for one candidate depends on the others (llm-d's scorers see every
    endpoint at once, e.g. to normalise queue lengths between their minimum and maximum): the
    router calls ``score_pool`` on all surviving candidates of every variant together (each
    value in [0, 1], in their order); ``score`` is one candidate alone."""

    def score_pool(self, request: RequestProfile, candidates: Sequence[Candidate]) -> Sequence[float]: ...


class Objective(Protocol):
    """Orders the variants that have at least one surviving replica."""

    name: str
    type: ClassVar[str]

    def order(self, request: RequestProfile, best: Sequence[Option]) -> VariantOrder:
        """``best`` holds each variant's best option (highest score); never empty."""
        ...


def expected_cost_usd(request: RequestProfile, option: Option) -> float:
    """The variant's price for this request, with the output length the router plans for."""
    price = option.candidate.variant.price
    return price.cost_usd(request.input_tokens, request.expected_output_tokens)
