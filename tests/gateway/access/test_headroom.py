"""The x-ratelimit-* headers: OpenAI's names, Go-style reset durations, remaining never below 0."""

from __future__ import annotations

import pytest

from gateway.access.headroom import NO_HEADROOM, Headroom, WindowLeft, duration


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0, "0s"), (-3.0, "0s"), (0.0004, "0s"), (0.012, "12ms"), (0.9994, "999ms"), (0.9996, "1s"),
    (1.0, "1s"), (1.5, "1.5s"), (59.4, "59.4s"), (59.4567, "59.457s"), (60.0, "1m0s"), (360.0, "6m0s"),
    (3723.5, "1h2m3.5s"), (7200.0, "2h0m0s"),
])
def test_durations_read_as_go_prints_them(seconds: float, text: str) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize(("limit", "used", "newest", "now", "left"), [
    (10, 0, None, 100.5, WindowLeft(10, 10, 0.0)),      # nothing counted: full, resets now
    (10, 3, 100, 100.5, WindowLeft(10, 7, 59.5)),       # empty once second 100 is 60 s old
    (10, 12, 90, 100.25, WindowLeft(10, 0, 49.75)),     # over the limit (tokens charged late): 0 left
    (10, 3, 30, 100.0, WindowLeft(10, 7, 0.0)),         # a stale newest second never gives a negative reset
])
def test_what_a_window_leaves(limit: int, used: int, newest: int | None, now: float, left: WindowLeft) -> None:
    assert WindowLeft.of(limit, used, newest, now) == left


def test_headers_only_for_the_limits_a_tier_has() -> None:
    assert NO_HEADROOM.headers() == ()
    assert Headroom(requests=WindowLeft(60, 59, 59.5)).headers() == (
        ("x-ratelimit-limit-requests", "60"), ("x-ratelimit-remaining-requests", "59"),
        ("x-ratelimit-reset-requests", "59.5s"))
    both = dict(Headroom(WindowLeft(60, 59, 59.5), WindowLeft(1000, 250, 12.0)).headers())
    assert both["x-ratelimit-remaining-tokens"] == "250" and both["x-ratelimit-reset-tokens"] == "12s"
    assert len(both) == 6
