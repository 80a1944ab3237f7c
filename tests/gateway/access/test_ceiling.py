"""A request's usage ceiling, read from its body: the output it allows and its choices."""

from __future__ import annotations

from pydantic import BaseModel

from gateway.access.ceiling import UsageCeiling, ceiling_of


class Body(BaseModel):
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    max_output_tokens: int | None = None
    n: int | None = None


def test_the_ceiling_takes_the_first_output_limit_the_body_sets_times_its_choices() -> None:
    assert ceiling_of(Body(max_completion_tokens=10, max_tokens=20, n=3), 400) == UsageCeiling(400, 10, 3)
    assert ceiling_of(Body(max_tokens=20), 400) == UsageCeiling(400, 20, 1)
    assert ceiling_of(Body(max_output_tokens=30), 400) == UsageCeiling(400, 30, 1)  # the Responses API's


def test_a_body_without_an_output_limit_may_use_what_the_context_leaves() -> None:
    assert ceiling_of(Body(), 400) == UsageCeiling(400, None, 1)
