"""Filters: keep or reject one candidate for one request. Each is a frozen dataclass whose
``name`` is the plugin instance's name from the config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import BreakerState, Candidate, Health, RequestProfile


@dataclass(frozen=True, slots=True)
class HealthyFilter:
    """Keeps replicas known to be up whose circuit breaker is not open. Unknown is not healthy."""

    name: str = "healthy"
    type: ClassVar[str] = "healthy"

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]:
        state = candidate.state
        if state.health is not Health.UP:
            return False, f"health {state.health.value}"
        if state.breaker is BreakerState.OPEN:
            return False, "circuit breaker open"
        return True, "up"


@dataclass(frozen=True, slots=True)
class ContextFitsFilter:
    """Keeps variants whose context holds the prompt plus the requested output (at least 1 token)."""

    name: str = "context-fits"
    type: ClassVar[str] = "context-fits"

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]:
        needed = request.input_tokens + (request.max_output_tokens or 1)
        limit = candidate.variant.max_model_len
        if needed > limit:
            return False, f"needs {needed} tokens, context is {limit}"
        return True, f"{needed} <= {limit}"


@dataclass(frozen=True, slots=True)
class ToolsSupportedFilter:
    """Keeps variants that can serve tool calls when the request carries tools."""

    name: str = "tools-supported"
    type: ClassVar[str] = "tools-supported"

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]:
        if request.has_tools and not candidate.variant.supports_tools:
            return False, "variant does not serve tools"
        return True, "ok"


@dataclass(frozen=True, slots=True)
class TaskAllowedFilter:
    """Keeps variants whose proven capability covers the request's task type (parity verdicts),
    and every other task it may be when the detector was unsure (``plausible_tasks``).

    A request pinned to a variant is kept: the client chose it knowingly.
    """

    name: str = "task-allowed"
    type: ClassVar[str] = "task-allowed"

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]:
        variant = candidate.variant
        if request.pinned_variant == variant.name:
            return True, "pinned"
        if not request.plausible_tasks:
            if variant.allows(request.task):
                return True, f"{request.task} allowed"
            return False, f"{request.task} not proven on {variant.name}"
        tasks = request.tasks_to_allow
        if variant.allows_all(tasks):
            return True, f"{', '.join(sorted(tasks))} allowed"
        refused = sorted(t for t in tasks if not variant.allows(t))
        others = ", ".join(sorted(tasks - {request.task}))
        return False, f"task unsure ({request.task} or {others}): {', '.join(refused)} not proven on {variant.name}"


@dataclass(frozen=True, slots=True)
class ErrorRateFilter:
    """Rejects replicas whose recent error rate exceeds ``max_error_rate`` (0..1)."""

    name: str = "error-rate"
    type: ClassVar[str] = "error-rate"
    max_error_rate: float = 0.5

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]:
        rate = candidate.state.error_rate
        if rate > self.max_error_rate:
            return False, f"error rate {rate:.2f} > {self.max_error_rate:.2f}"
        return True, f"error rate {rate:.2f}"
