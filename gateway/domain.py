"""Duet's vocabulary: the plain, immutable data that every layer speaks.

Nothing here does I/O or imports a framework. Routing consumes these types; replica state
produces ``ReplicaState`` snapshots; the HTTP layer builds ``RequestProfile`` values and
turns ``Decision`` values into upstream calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class VariantKind(StrEnum):
    """How a variant was made from the standard model."""

    FULL = "full"
    QUANTIZED = "quantized"
    SPECULATIVE = "speculative"


class Health(StrEnum):
    """What the gateway believes about a replica's liveness. Stale knowledge is UNKNOWN."""

    UP = "up"
    DOWN = "down"
    UNKNOWN = "unknown"


class BreakerState(StrEnum):
    """Circuit-breaker position: OPEN refuses traffic, HALF_OPEN lets one probe through."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Priority(StrEnum):
    """Admission classes, highest first."""

    INTERACTIVE = "interactive"
    BATCH = "batch"
    SHEDDABLE = "sheddable"


@dataclass(frozen=True, slots=True)
class Price:
    """USD per one million tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


@dataclass(frozen=True, slots=True)
class SpeedPrior:
    """What a variant's replica is expected to do before the gateway has observed it.

    ``prefill_tokens_per_s``: prompt tokens processed per second by an idle replica.
    ``decode_s_per_token``: time per output token at batch size 1.
    ``decode_slowdown_per_seq``: fractional growth of time per token per extra running sequence
    (0.02 = each concurrent sequence makes every token 2% slower).
    """

    prefill_tokens_per_s: float
    decode_s_per_token: float
    decode_slowdown_per_seq: float = 0.02


@dataclass(frozen=True, slots=True)
class Variant:
    """One served version of a logical model (its replicas are listed separately)."""

    model: str
    name: str
    kind: VariantKind
    served_model_name: str
    max_model_len: int
    supports_tools: bool
    price: Price
    speed: SpeedPrior
    # None means every task type is allowed; otherwise the task types parity has proven.
    allowed_tasks: frozenset[str] | None = None

    @property
    def key(self) -> str:
        return f"{self.model}:{self.name}"

    def allows(self, task: str) -> bool:
        return self.allowed_tasks is None or task in self.allowed_tasks


@dataclass(frozen=True, slots=True)
class Replica:
    """One vLLM server (a base URL without the /v1 suffix) serving one variant."""

    id: str
    model: str
    variant: str
    url: str


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """A snapshot of one replica, as routing sees it. ``None`` means not known."""

    replica_id: str
    health: Health = Health.UNKNOWN
    breaker: BreakerState = BreakerState.CLOSED
    in_flight: int = 0
    # From the replica's vLLM /metrics (gauges at last scrape).
    running: int | None = None
    waiting: int | None = None
    kv_cache_usage: float | None = None
    # From the gateway's own observations of finished requests (EWMA, seconds).
    ttft_s: float | None = None
    tpot_s: float | None = None
    error_rate: float = 0.0

    @property
    def routable(self) -> bool:
        return self.health is Health.UP and self.breaker is not BreakerState.OPEN


@dataclass(frozen=True, slots=True)
class RequestProfile:
    """What the router knows about a request before it runs."""

    model: str
    task: str
    task_source: str
    input_tokens: int
    # The client's max_tokens (None: up to the context); and what the router plans for: the
    # forced length (min_tokens / ignore_eos) or min(max_tokens, the task's typical output).
    max_output_tokens: int | None
    expected_output_tokens: int
    has_tools: bool = False
    stream: bool = False
    pinned_variant: str | None = None
    # Budgets from headers, else the task's defaults; None means no target.
    ttft_budget_ms: float | None = None
    latency_budget_ms: float | None = None
    tpot_budget_ms: float | None = None
    priority: Priority = Priority.INTERACTIVE


@dataclass(frozen=True, slots=True)
class Candidate:
    """A replica considered for a request, with its variant and state."""

    replica: Replica
    variant: Variant
    state: ReplicaState


@dataclass(frozen=True, slots=True)
class Prediction:
    """Predicted latency of a request on one candidate, in milliseconds."""

    ttft_ms: float
    e2e_ms: float
    tpot_ms: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """One plugin's word on one candidate: kept/rejected by a filter, or a score in [0, 1]."""

    plugin: str
    replica_id: str
    passed: bool
    score: float | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """The router's answer: the variant chosen, replicas ranked (head first), and why."""

    model: str
    variant: str | None
    ranked: tuple[Replica, ...]
    reason: str
    meets_budget: bool
    predictions: dict[str, Prediction] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()
    profile: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to a request on one replica; fed back into replica state and telemetry."""

    replica_id: str
    ok: bool
    status: int
    ttft_s: float | None
    duration_s: float
    input_tokens: int
    output_tokens: int
