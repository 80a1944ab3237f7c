"""Failure settings and each request's fate."""

from __future__ import annotations

import random

import pytest

from serving.sim.server.faults import FaultError, Faults, RequestFate, decide, parse_kinds


def test_headers_force_a_fate() -> None:
    rng = random.Random(0)
    assert decide(Faults(), {"x-sim-fail": "503"}, rng) == RequestFate(fail_status=503)
    assert decide(Faults(), {"x-sim-hang": "1"}, rng) == RequestFate(hang=True)
    assert decide(Faults(), {"x-sim-die-after-tokens": "5"}, rng) == RequestFate(die_after_tokens=5)
    assert decide(Faults(), {}, rng) == RequestFate()


def test_error_rate_draws_from_the_kinds() -> None:
    rng = random.Random(1)
    faults = Faults(error_rate=0.3, error_kinds=(429, 503))
    fates = [decide(faults, {}, rng).fail_status for _ in range(2000)]
    failed = [f for f in fates if f is not None]
    assert 0.25 < len(failed) / len(fates) < 0.35
    assert set(failed) == {429, 503}


def test_replica_wide_settings_apply_without_headers() -> None:
    rng = random.Random(0)
    assert decide(Faults(hang=True), {}, rng).hang
    assert decide(Faults(die_after_tokens=3), {}, rng).die_after_tokens == 3


def test_updates_change_only_the_keys_given() -> None:
    faults = Faults(slowdown=2.0).updated({"error_rate": 0.5, "error_kinds": "429,500"})
    assert (faults.slowdown, faults.error_rate, faults.error_kinds) == (2.0, 0.5, (429, 500))


@pytest.mark.parametrize("changes, knob", [
    ({"error_rate": 2}, "error_rate"), ({"error_kinds": [418]}, "error_kinds"),
    ({"slowdown": 0}, "slowdown"), ({"explode": True}, "explode"),
])
def test_invalid_updates_name_the_knob(changes: dict[str, object], knob: str) -> None:
    with pytest.raises(FaultError, match=knob):
        Faults().updated(changes)


def test_kinds_parse_from_text_or_list() -> None:
    assert parse_kinds("429, 500") == (429, 500) and parse_kinds([503]) == (503,)
