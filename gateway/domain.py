"""Duet's vocabulary: the plain, immutable data that every layer speaks.

Nothing here does I/O or imports a framework; of the project it imports only the value types
beneath it, a variant's speed (``gateway.speed``) and cost (``gateway.cost``). Routing consumes
these types and answers with a ``gateway.decision.Decision``; replica state produces
``ReplicaState`` snapshots and takes ``gateway.outcome.Outcome`` values back; the HTTP layer
builds ``RequestProfile`` values.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gateway.cost import Price, ReplicaCost
from gateway.speed import SpeedPrior


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

    @property
    def rank(self) -> int:
        """0 for the highest class; a lower rank is served first. Also vLLM's ``priority`` for
        the class (lower is scheduled earlier: 0 interactive, 1 batch, 2 sheddable)."""
        return _PRIORITY_ORDER.index(self)


_PRIORITY_ORDER = tuple(Priority)


class Scheduling(StrEnum):
    """How a variant's vLLM replicas order their waiting requests (``--scheduling-policy``):
    FCFS ignores a request's ``priority``, PRIORITY serves the lowest value first and preempts
    the highest."""

    FCFS = "fcfs"
    PRIORITY = "priority"


@dataclass(frozen=True, slots=True)
class Budget:
    """A request's latency targets in milliseconds (None: no target). TPOT is vLLM bench serve's:
    (end-to-end - TTFT) / (output tokens - 1), undefined for one-token answers.

    The one place that says whether a prediction fits the budget, whether a finished request met
    it, how much stall a running request can still take, and how long it may wait to start."""

    ttft_ms: float | None = None
    latency_ms: float | None = None
    tpot_ms: float | None = None

    def fits(self, prediction: Prediction, margin: float = 1.0) -> bool:
        """True when the prediction, inflated by ``margin`` (1.1 = 10% safety), fits every target."""
        if self.ttft_ms is not None and prediction.ttft_ms * margin > self.ttft_ms:
            return False
        if self.latency_ms is not None and prediction.e2e_ms * margin > self.latency_ms:
            return False
        return not (self.tpot_ms is not None and prediction.tpot_ms * margin > self.tpot_ms)

    def met_by(self, ttft_s: float | None, e2e_s: float, output_tokens: int) -> bool:
        """Whether a request that answered (first token after ``ttft_s``, done after ``e2e_s``)
        met every target. Without a measured TTFT (a non-stream answer) the client's first token
        came with the whole answer, so ``e2e_s`` is judged against the TTFT target."""
        first_s = e2e_s if ttft_s is None else ttft_s
        if self.ttft_ms is not None and first_s * 1e3 > self.ttft_ms:
            return False
        if self.latency_ms is not None and e2e_s * 1e3 > self.latency_ms:
            return False
        if self.tpot_ms is not None and ttft_s is not None and output_tokens > 1:
            return (e2e_s - ttft_s) / (output_tokens - 1) * 1e3 <= self.tpot_ms
        return True

    def slack_ms(self, prediction: Prediction, output_tokens: int) -> float | None:
        """Milliseconds of stall after the first token that a request predicted as ``prediction``
        and planned for ``output_tokens`` can take and still meet its TPOT and end-to-end targets
        (negative: predicted to miss already); None without either target."""
        slacks = []
        steps = max(0, output_tokens - 1)
        if self.tpot_ms is not None and steps:
            slacks.append((self.tpot_ms - prediction.tpot_ms) * steps)
        if self.latency_ms is not None:
            slacks.append(self.latency_ms - prediction.e2e_ms)
        return min(slacks) if slacks else None

    def over_by(self, prediction: Prediction) -> float:
        """How many times over its tightest start or end target ``prediction`` is (1: within)."""
        ratios = [1.0]
        if self.ttft_ms:
            ratios.append(prediction.ttft_ms / self.ttft_ms)
        if self.latency_ms:
            ratios.append(prediction.e2e_ms / self.latency_ms)
        return max(ratios)

    def deadline_s(self, default_s: float) -> float:
        """How long the request may wait to start: its TTFT target, else its end-to-end target,
        else ``default_s``; past that, waiting longer cannot help it."""
        if self.ttft_ms:
            return self.ttft_ms / 1e3
        if self.latency_ms:
            return self.latency_ms / 1e3
        return default_s

    def after(self, elapsed_ms: float) -> Budget:
        """What is left of the start and end targets once ``elapsed_ms`` were spent (a second
        try of a request starts that late); TPOT is per token and stays."""
        return Budget(None if self.ttft_ms is None else self.ttft_ms - elapsed_ms,
                      None if self.latency_ms is None else self.latency_ms - elapsed_ms, self.tpot_ms)


class RolloutStage(StrEnum):
    """How far a variant is rolled out: SHADOW serves only pinned requests (the rest of its
    traffic is shadow checks), CANARY a share of each task's live requests, FULL all it allows."""

    SHADOW = "shadow"
    CANARY = "canary"
    FULL = "full"


@dataclass(frozen=True, slots=True)
class Rollout:
    """A variant's rollout stage and, for a canary, the share of each task type's live requests
    it may take (0..1; a task type not listed gets none)."""

    stage: RolloutStage = RolloutStage.FULL
    canary_shares: tuple[tuple[str, float], ...] = ()

    def share(self, task: str) -> float:
        """The share of ``task``'s live requests the variant may serve, in [0, 1]."""
        if self.stage is RolloutStage.FULL:
            return 1.0
        if self.stage is RolloutStage.SHADOW:
            return 0.0
        return dict(self.canary_shares).get(task, 0.0)


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
    rollout: Rollout = Rollout()
    scheduling: Scheduling = Scheduling.FCFS
    # What one replica costs per hour (None: the config gave a per-token price instead).
    replica_cost: ReplicaCost | None = None
    # The variant whose weights this one verifies with, so its replicas may decode KV that
    # variant's replicas prefilled (a speculative variant over the standard weights; None: only
    # its own KV). A quantized variant computes other KV: config refuses it one.
    shares_weights_with: str | None = None

    @property
    def key(self) -> str:
        return f"{self.model}:{self.name}"

    def allows(self, task: str) -> bool:
        return self.allowed_tasks is None or task in self.allowed_tasks

    def allows_all(self, tasks: frozenset[str]) -> bool:
        return self.allowed_tasks is None or tasks <= self.allowed_tasks


class EngineRole(StrEnum):
    """A replica's part in disaggregated serving: ``both`` prefills prompts and decodes answers
    (vLLM without a KV connector, or ``kv_both``); ``prefill`` computes prompts and hands their KV
    to a decode replica (``kv_producer``); ``decode`` answers only from KV handed to it
    (``kv_consumer``)."""

    BOTH = "both"
    PREFILL = "prefill"
    DECODE = "decode"


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How a replica's vLLM engine is configured, beyond its variant's launch profile: its role,
    its chunk budget (``--max-num-batched-tokens``: the prompt tokens one step may compute, so a
    long prompt takes several steps and every running decode waits for each), its largest batch
    (``--max-num-seqs``) and the KV connector a P/D role moves KV through. ``None``: the launch
    profile's value, else vLLM's default."""

    role: EngineRole = EngineRole.BOTH
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    kv_connector: str | None = None

    @property
    def prefills(self) -> bool:
        """Whether the replica computes clients' prompts."""
        return self.role is not EngineRole.DECODE

    @property
    def decodes(self) -> bool:
        """Whether the replica writes clients' answers."""
        return self.role is not EngineRole.PREFILL


@dataclass(frozen=True, slots=True)
class Replica:
    """One vLLM server (a base URL without the /v1 suffix) serving one variant, with its engine
    configuration."""

    id: str
    model: str
    variant: str
    url: str
    engine: EngineConfig = EngineConfig()


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
    # Prompt tokens per second the replica prefilled recently (from prompt_tokens_total).
    prefill_tokens_per_s: float | None = None
    # Prompt tokens this gateway sent that are not prefilled yet (queued ahead of a new request).
    prefill_backlog_tokens: int = 0
    # The least slack of this gateway's in-flight requests there: ms of prefill stall the one
    # closest to its budget can still take (None: none with a budget in flight).
    decode_slack_ms: float | None = None
    # From the gateway's own observations of finished requests (EWMA, seconds).
    ttft_s: float | None = None
    tpot_s: float | None = None
    error_rate: float = 0.0
    # Learned corrections of the latency model: recent actual / predicted (1 = unbiased).
    ttft_bias: float = 1.0
    tpot_bias: float = 1.0
    # When the replica's vLLM process started (Unix seconds, its /metrics): a change means a
    # restart, which empties its prompt cache.
    started_at: float | None = None
    # Fraction of prompt tokens vLLM found in its prefix cache, between the last two scrapes.
    prefix_cache_hit_rate: float | None = None
    # The engine role and chunk budget the replica reports (its /metrics; None: not reported,
    # as real vLLM does not: routing then trusts the configured ``Replica.engine``).
    role: EngineRole | None = None
    chunk_budget: int | None = None

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
    # forced length (min_tokens / ignore_eos) or min(max_tokens, the task's typical output: learned
    # from finished requests, or the configured one until enough have finished).
    max_output_tokens: int | None
    expected_output_tokens: int
    has_tools: bool = False
    stream: bool = False
    pinned_variant: str | None = None
    # From headers, else the task's defaults.
    budget: Budget = Budget()
    priority: Priority = Priority.INTERACTIVE
    # A number in [0, 1) from the request id's hash: a canary's share is compared with it, so one
    # request always routes alike (in a dry run, a replay and the gateway) and routing stays pure.
    draw: float = 0.0
    # The task detector's probability for ``task`` (None: the task came from a header or a rule),
    # and every task the request may be (empty: ``task`` alone). A variant serves the request only
    # if parity allows it all of them: an abstained detection names every task.
    task_confidence: float | None = None
    plausible_tasks: frozenset[str] = frozenset()

    @property
    def tasks_to_allow(self) -> frozenset[str]:
        """The tasks a variant's parity must allow to serve this request."""
        return self.plausible_tasks | {self.task}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A replica considered for a request, with its variant and state."""

    replica: Replica
    variant: Variant
    state: ReplicaState
    # Prompt tokens of this request the replica is believed to hold in its prefix cache (the
    # gateway's prefix index): their prefill is skipped there.
    cached_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Prediction:
    """Predicted latency of a request on one candidate, in milliseconds. ``model_*`` are the
    latency model's values before the replica's learned bias (what the bias is learned on)."""

    ttft_ms: float
    e2e_ms: float
    tpot_ms: float
    model_ttft_ms: float | None = None
    model_tpot_ms: float | None = None
    # How busy the replica's compute is (prompt-token utilisation, 0..1): the higher, the more
    # prompts arriving later can stretch this request's decode beyond the prediction.
    utilisation: float = 0.0
