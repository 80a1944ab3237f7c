"""The in-memory demand store: one meter per model on the store's clock, its horizon following
the config."""

from __future__ import annotations

import asyncio

import pytest

from gateway.state.demand import InMemoryDemand


class Clock:
    def __init__(self, at: float = 1000.0) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def test_demand_is_per_model_and_task_over_each_window_on_the_stores_clock() -> None:
    clock = Clock()
    store = InMemoryDemand(clock)
    for _ in range(60):  # 2 chat requests a second for 60 s, one coding answer at the end
        store.arrived("m", "chat", 100, 120.0)
        clock.at += 0.5
        store.arrived("m", "chat", 300, 120.0)
        clock.at += 0.5
    store.answered("m", "coding", 40, 120.0)
    store.arrived("other", "chat", 10, 120.0)
    short, long = asyncio.run(store.demand("m", (10.0, 120.0), 120.0))
    assert short["chat"].rate_per_s == pytest.approx(2.0, rel=0.1) and long["chat"].prompt_tokens == 200
    assert long["coding"].rate_per_s == 0 and long["coding"].output_tokens == 40


def test_a_new_horizon_starts_the_model_again() -> None:
    clock = Clock()
    store = InMemoryDemand(clock)
    store.arrived("m", "chat", 100, 120.0)
    clock.at += 5
    store.arrived("m", "chat", 100, 300.0)  # a reload lengthened rate_window_s
    (long,) = asyncio.run(store.demand("m", (300.0,), 300.0))
    assert long["chat"].rate_per_s == pytest.approx(1.0)  # one arrival since the new meter began, in one second


def test_read_is_the_demand_without_the_await() -> None:
    """The replay's autoscaler reads synchronously, in virtual time: the same windows as the gauge's."""
    clock = Clock()
    store = InMemoryDemand(clock)
    for _ in range(30):
        store.arrived("m", "chat", 100, 120.0)
        clock.at += 1
    store.answered("m", "chat", 40, 120.0)
    read = store.read("m", (10.0, 120.0), 120.0)
    assert read == asyncio.run(store.demand("m", (10.0, 120.0), 120.0))
    assert read[1]["chat"].rate_per_s == pytest.approx(1.0) and read[1]["chat"].output_tokens == 40
