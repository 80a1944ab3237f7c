"""The routing policy as the running gateway holds it: task types with their defaults, the
rules that infer a task from a request, and the routing profiles (plugin pipelines)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from gateway.detect import Detector
from gateway.domain import Priority
from gateway.routing.router import RoutingProfile


class Signal(StrEnum):
    """What a task rule looks at."""

    HAS_TOOLS = "has_tools"
    HAS_CODE = "has_code"
    INPUT_TOKENS_OVER = "input_tokens_over"


# The rules the detector leaves to run first: explicit shapes of a request, not guesses.
SHAPE_SIGNALS = (Signal.HAS_TOOLS, Signal.INPUT_TOKENS_OVER)

@dataclass(frozen=True, slots=True)
class TaskRule:
    """``if signal (over threshold) then task``; rules are tried in order, first match wins."""

    signal: Signal
    task: str
    threshold: int = 0


@dataclass(frozen=True, slots=True)
class TaskDefaults:
    """A task type's default budgets (ms, None = none), typical output length and priority."""

    ttft_ms: float | None
    latency_ms: float | None
    tpot_ms: float | None
    expected_output_tokens: int
    priority: Priority = Priority.INTERACTIVE


@dataclass(frozen=True, slots=True)
class PrefixCacheSettings:
    """How the gateway's prefix index cuts prompts: ``block_tokens`` tokens per block (a replayed
    Mooncake trace names 512-token blocks, so its policy says 512), and how many blocks it
    remembers per replica (least recently routed forgotten first; llm-d's default 31,250).
    256 tokens: the index costs one hash call per block (``make bench-router``: an 8k-token
    prompt's index work measured ~40 µs at p50 with 256-token blocks, ~70 with 128, ~170 with
    64), and a cached prefix is credited to within a block, which only ever under-counts it."""

    block_tokens: int = 256
    blocks_per_replica: int = 31_250


@dataclass(frozen=True, slots=True)
class DisaggregationSettings:
    """When a request is split between a prefill and a decode replica (where the model has
    both roles; ``gateway.routing.pd``): ``rule`` ``duet`` (predicted budgets and load),
    ``threshold`` (llm-d's prefix-based decider: uncached prompt tokens at least
    ``non_cached_tokens``, prompts of at least ``prompt_tokens``; 16 as llm-d's shipped P/D
    config) or ``never``."""

    rule: str = "duet"
    non_cached_tokens: int = 16
    prompt_tokens: int = 0


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Whether a conversation keeps its variant (and replica) from turn to turn, and how many
    sessions the gateway remembers (least recently seen forgotten first)."""

    enabled: bool = True
    remembered: int = 100_000


@dataclass(frozen=True, slots=True)
class DetectorSettings:
    """The task detector (``gateway.detect``) and when it abstains: below ``threshold`` of
    confidence every task is plausible; above it, every task whose probability reaches ``floor``.
    The defaults are the ones its training chose on the tuning split (``python -m
    gateway.detect.train``; docs/routing.md). ``Policy.detection`` None: off, the rules alone decide."""

    detector: Detector
    threshold: float
    floor: float


@dataclass(frozen=True, slots=True)
class Policy:
    tasks: Mapping[str, TaskDefaults]
    rules: tuple[TaskRule, ...]
    default_task: str
    profiles: Mapping[str, RoutingProfile]
    default_profile: str
    task_profiles: Mapping[str, str]
    prefix_cache: PrefixCacheSettings = PrefixCacheSettings()
    sessions: SessionSettings = SessionSettings()
    detection: DetectorSettings | None = None
    disaggregation: DisaggregationSettings = DisaggregationSettings()
    # Read off the rules once per config (every request a detector serves reads them):
    # the rules of explicit request shapes, which run before the detector (not guesses);
    shape_rules: tuple[TaskRule, ...] = field(init=False, compare=False)
    # the tasks a prompt-size rule defines (``input_tokens_over``): a prompt that reached the
    # detector is under every such rule's size, so it is none of them by the config's own
    # definition, and the detector may not make them plausible. Without this, the detector's small
    # probability of a long document (it trains on none: no registry package ships one) kept most
    # short chat and coding off a variant refusing long documents (its floor is low, so any task it
    # cannot rule out stays plausible). ``has_tools`` is not such a definition: agent turns with
    # their functions described in the system prompt carry no tools field;
    sized_tasks: frozenset[str] = field(init=False, compare=False)
    # and the tasks the detector may answer: the others.
    detectable_tasks: frozenset[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        sized = frozenset(rule.task for rule in self.rules if rule.signal is Signal.INPUT_TOKENS_OVER)
        object.__setattr__(self, "shape_rules", tuple(r for r in self.rules if r.signal in SHAPE_SIGNALS))
        object.__setattr__(self, "sized_tasks", sized)
        object.__setattr__(self, "detectable_tasks", frozenset(t for t in self.tasks if t not in sized))

    def profile_for(self, task: str) -> RoutingProfile:
        return self.profiles[self.task_profiles.get(task, self.default_profile)]
