"""The circuit breaker state machine, driven by explicit clock values."""

from __future__ import annotations

import pytest

from gateway.domain import BreakerState
from gateway.state.breaker import (
    Breaker,
    BreakerPolicy,
    Permit,
    admit,
    record_failure,
    record_success,
    release_probe,
)

POLICY = BreakerPolicy(
    failure_threshold=3, cooldown_s=10.0, max_cooldown_s=25.0, backoff=2.0, probe_timeout_s=5.0
)


def _fail(breaker: Breaker, times: int, now: float) -> Breaker:
    for _ in range(times):
        breaker = record_failure(breaker, POLICY, now)
    return breaker


def _opened_at_zero() -> Breaker:
    breaker = _fail(Breaker(), POLICY.failure_threshold, now=0.0)
    assert breaker.position(0.0) is BreakerState.OPEN
    return breaker


@pytest.mark.parametrize(("failures", "position"), [(0, "closed"), (2, "closed"), (3, "open")])
def test_opens_after_threshold_consecutive_failures(failures: int, position: str) -> None:
    assert _fail(Breaker(), failures, now=1.0).position(1.0) is BreakerState(position)


def test_a_success_resets_the_failure_run() -> None:
    breaker = record_success(_fail(Breaker(), 2, now=0.0), now=0.0)
    assert breaker.consecutive_failures == 0
    assert _fail(breaker, 2, now=0.0).position(0.0) is BreakerState.CLOSED


def test_closed_admits_everything() -> None:
    breaker, permit = admit(Breaker(), POLICY, now=0.0)
    assert permit is Permit.ALLOWED and breaker == Breaker()


@pytest.mark.parametrize(
    ("now", "position", "permit"),
    [
        (0.0, BreakerState.OPEN, Permit.REFUSED),
        (9.99, BreakerState.OPEN, Permit.REFUSED),
        (10.0, BreakerState.HALF_OPEN, Permit.PROBE),
        (100.0, BreakerState.HALF_OPEN, Permit.PROBE),
    ],
)
def test_open_turns_half_open_after_cooldown(
    now: float, position: BreakerState, permit: Permit
) -> None:
    breaker = _opened_at_zero()
    assert breaker.position(now) is position
    assert admit(breaker, POLICY, now)[1] is permit


def test_half_open_admits_exactly_one_probe() -> None:
    probing, first = admit(_opened_at_zero(), POLICY, now=10.0)
    _, second = admit(probing, POLICY, now=10.0)
    assert (first, second) == (Permit.PROBE, Permit.REFUSED)
    # Routing sees a breaker whose probe is out as OPEN.
    assert probing.position(10.0) is BreakerState.HALF_OPEN
    assert probing.view(10.0) is BreakerState.OPEN
    assert _opened_at_zero().view(10.0) is BreakerState.HALF_OPEN


def test_probe_success_closes_and_resets() -> None:
    probing, _ = admit(_opened_at_zero(), POLICY, now=10.0)
    assert record_success(probing, now=11.0) == Breaker()


def test_probe_failure_reopens_with_backed_off_cooldown_up_to_max() -> None:
    breaker = _opened_at_zero()
    cooldowns = []
    now = 0.0
    for _ in range(4):
        now = breaker.opened_at + breaker.cooldown_s
        breaker, permit = admit(breaker, POLICY, now)
        assert permit is Permit.PROBE
        breaker = record_failure(breaker, POLICY, now + 1.0)
        assert breaker.position(now + 1.0) is BreakerState.OPEN
        cooldowns.append(breaker.cooldown_s)
    assert cooldowns == [20.0, 25.0, 25.0, 25.0]
    # After a success the next opening starts again from the base cooldown.
    breaker, _ = admit(breaker, POLICY, breaker.opened_at + breaker.cooldown_s)
    breaker = _fail(record_success(breaker, now), POLICY.failure_threshold, now)
    assert breaker.cooldown_s == POLICY.cooldown_s


def test_a_lost_probe_stops_blocking_after_probe_timeout() -> None:
    probing, _ = admit(_opened_at_zero(), POLICY, now=10.0)
    assert admit(probing, POLICY, now=14.9)[1] is Permit.REFUSED
    assert admit(probing, POLICY, now=15.0)[1] is Permit.PROBE


def test_a_neutral_outcome_releases_the_probe() -> None:
    probing, _ = admit(_opened_at_zero(), POLICY, now=10.0)
    released = release_probe(probing)
    assert released.position(10.0) is BreakerState.HALF_OPEN
    assert admit(released, POLICY, now=10.0)[1] is Permit.PROBE
    assert release_probe(Breaker()) == Breaker()


def test_outcomes_reaching_an_open_breaker_are_ignored() -> None:
    breaker = _opened_at_zero()
    assert record_success(breaker, now=5.0) == breaker
    assert record_failure(breaker, POLICY, now=5.0) == breaker  # cooldown is not extended


@pytest.mark.parametrize(
    "kwargs",
    [
        {"failure_threshold": 0},
        {"cooldown_s": 0.0},
        {"cooldown_s": 10.0, "max_cooldown_s": 5.0},
        {"backoff": 0.5},
    ],
)
def test_policy_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BreakerPolicy(**kwargs)  # type: ignore[arg-type]
