"""The failed-authentication limit per client address and the unknown-key cache: both bounded,
both forgetting with time."""

from __future__ import annotations

from gateway.access.failures import WINDOW_S, FailedAuthLimit
from gateway.access.unknown import UnknownKeys


def test_an_address_is_locked_past_its_limit_for_the_rest_of_its_minute() -> None:
    limit = FailedAuthLimit()
    for i in range(3):
        assert limit.retry_after("10.0.0.1", 3, now=float(i)) is None
        limit.fail("10.0.0.1", now=float(i))
    assert limit.retry_after("10.0.0.1", 3, now=10.0) == WINDOW_S - 10.0
    assert limit.retry_after("10.0.0.2", 3, now=10.0) is None  # per address
    assert limit.retry_after("10.0.0.1", 0, now=10.0) is None  # 0: no limit
    assert limit.retry_after("10.0.0.1", 3, now=WINDOW_S) is None  # a new minute


def test_the_limit_tracks_a_bounded_number_of_addresses() -> None:
    limit = FailedAuthLimit(capacity=100)
    for i in range(10_000):
        limit.fail(f"10.0.{i // 256}.{i % 256}", now=0.0)
    assert len(limit) == 100


def test_unknown_keys_are_remembered_for_their_ttl_in_a_bounded_lru() -> None:
    unknown = UnknownKeys(capacity=3, ttl_s=10.0)
    for name in "abcd":
        unknown.add(name, now=0.0)
    assert len(unknown) == 3 and not unknown.known_unknown("a", now=1.0)  # the oldest went first
    assert unknown.known_unknown("b", now=1.0)
    assert not unknown.known_unknown("b", now=10.0) and len(unknown) == 2
