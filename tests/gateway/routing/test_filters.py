import pytest

from gateway.domain import BreakerState, Health
from gateway.routing.filters import (
    ContextFitsFilter,
    ErrorRateFilter,
    HealthyFilter,
    TaskAllowedFilter,
    ToolsSupportedFilter,
)

from .factories import FAST, STANDARD, candidate, request

CASES = [
    # (filter, request overrides, candidate, kept)
    (HealthyFilter(), {}, candidate(STANDARD), True),
    (HealthyFilter(), {}, candidate(STANDARD, health=Health.DOWN), False),
    (HealthyFilter(), {}, candidate(STANDARD, health=Health.UNKNOWN), False),
    (HealthyFilter(), {}, candidate(STANDARD, breaker=BreakerState.OPEN), False),
    (HealthyFilter(), {}, candidate(STANDARD, breaker=BreakerState.HALF_OPEN), True),
    (ContextFitsFilter(), {"input_tokens": 2000, "max_output_tokens": 48}, candidate(FAST), True),
    (ContextFitsFilter(), {"input_tokens": 2000, "max_output_tokens": 49}, candidate(FAST), False),
    (ContextFitsFilter(), {"input_tokens": 2048, "max_output_tokens": None}, candidate(FAST), False),
    (ContextFitsFilter(), {"input_tokens": 2047, "max_output_tokens": None}, candidate(FAST), True),
    (ToolsSupportedFilter(), {"has_tools": True}, candidate(FAST), False),
    (ToolsSupportedFilter(), {"has_tools": True}, candidate(STANDARD), True),
    (ToolsSupportedFilter(), {"has_tools": False}, candidate(FAST), True),
    (TaskAllowedFilter(), {"task": "reasoning"}, candidate(FAST), False),
    (TaskAllowedFilter(), {"task": "reasoning"}, candidate(STANDARD), True),
    (TaskAllowedFilter(), {"task": "coding"}, candidate(FAST), True),
    (TaskAllowedFilter(), {"task": "reasoning", "pinned_variant": "fast"}, candidate(FAST), True),
    # unsure detections: every plausible task must be allowed
    (TaskAllowedFilter(), {"task": "coding", "plausible_tasks": frozenset({"coding", "reasoning"})}, candidate(FAST), False),
    (TaskAllowedFilter(), {"task": "coding", "plausible_tasks": frozenset({"coding", "reasoning"})}, candidate(STANDARD), True),
    (TaskAllowedFilter(), {"task": "chat", "plausible_tasks": frozenset({"chat", "coding"})}, candidate(FAST), True),
    (ErrorRateFilter(max_error_rate=0.5), {}, candidate(STANDARD, error_rate=0.6), False),
    (ErrorRateFilter(max_error_rate=0.5), {}, candidate(STANDARD, error_rate=0.5), True),
]


@pytest.mark.parametrize(("plugin", "overrides", "cand", "kept"), CASES)
def test_filter_verdicts(plugin, overrides, cand, kept):
    result, reason = plugin.keep(request(**overrides), cand)
    assert result is kept
    assert reason
