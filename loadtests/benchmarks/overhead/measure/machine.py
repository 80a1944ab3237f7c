"""How busy the machine is apart from the benchmark: other work on the two cores (a vLLM
replica, a test suite) skews every number, so the run measures it and says so."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

PROC_STAT = Path("/proc/stat")


def core_jiffies(stat_text: str) -> dict[str, tuple[int, int]]:
    """Per core (``cpu0``, ``cpu1``...): (busy, total) jiffies from /proc/stat's text.

    Busy is everything but idle and iowait.
    """
    result = {}
    for line in stat_text.splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu":
            values = [int(v) for v in fields[:8]]
            total = sum(values)
            result[name] = (total - values[3] - values[4], total)
    return result


def busy_fractions(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> dict[str, float]:
    """Per core, the fraction of time busy between two ``core_jiffies`` readings, in [0, 1]."""
    fractions = {}
    for core, (busy_after, total_after) in after.items():
        busy_before, total_before = before.get(core, (busy_after, total_after))
        elapsed = total_after - total_before
        fractions[core] = (busy_after - busy_before) / elapsed if elapsed else 0.0
    return fractions


def measure_busy(seconds: float = 2.0) -> dict[str, float]:
    """Per core, how busy the machine is over the next ``seconds`` (before the run starts)."""
    before = core_jiffies(PROC_STAT.read_text())
    time.sleep(seconds)  # a sampling window, not a wait for a condition
    return busy_fractions(before, core_jiffies(PROC_STAT.read_text()))


def wait_until_quiet(
    threshold: float, timeout_s: float, say: Callable[[str], None]
) -> dict[str, float]:
    """Sample until every core is below ``threshold`` busy, or ``timeout_s`` has passed;
    return the last sample either way (the report quotes it)."""
    deadline = time.monotonic() + timeout_s
    fractions = measure_busy()
    while max(fractions.values()) >= threshold and time.monotonic() < deadline:
        say(f"machine busy ({describe_busy(fractions)}); waiting for it to quiet down")
        fractions = measure_busy(5.0)
    return fractions


def describe_busy(fractions: dict[str, float]) -> str:
    """``cpu0 3%, cpu1 1%``."""
    return ", ".join(f"{core} {100 * value:.0f}%" for core, value in sorted(fractions.items()))
