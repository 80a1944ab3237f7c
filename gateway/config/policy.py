"""The routing policy as the running gateway holds it: task types with their defaults, the
rules that infer a task from a request, and the routing profiles (plugin pipelines)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from gateway.domain import Priority
from gateway.routing.router import RoutingProfile


class Signal(StrEnum):
    """What a task rule looks at."""

    HAS_TOOLS = "has_tools"
    HAS_CODE = "has_code"
    INPUT_TOKENS_OVER = "input_tokens_over"


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
class Policy:
    tasks: Mapping[str, TaskDefaults]
    rules: tuple[TaskRule, ...]
    default_task: str
    profiles: Mapping[str, RoutingProfile]
    default_profile: str
    task_profiles: Mapping[str, str]

    def profile_for(self, task: str) -> RoutingProfile:
        return self.profiles[self.task_profiles.get(task, self.default_profile)]
