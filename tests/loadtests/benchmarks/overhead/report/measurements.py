"""Measurements made up for the report's tests."""

from __future__ import annotations

from loadtests.benchmarks.overhead.measure.phases import Measurement
from loadtests.benchmarks.overhead.measure.wrk import WrkResult


def wrk(p50_us: float, rps: float, errors: int = 0) -> WrkResult:
    return WrkResult(requests=int(rps * 10), duration_us=10_000_000, errors=errors, p50_us=p50_us,
                     p90_us=p50_us * 2, p99_us=p50_us * 3, mean_us=p50_us, max_us=p50_us * 4)


def m(gateway: str, mode: str, p50_us: float, rps: float, errors: int = 0) -> Measurement:
    return Measurement(gateway, mode, wrk(p50_us, rps, errors), wrk(p50_us * 10, rps), 0.9)
