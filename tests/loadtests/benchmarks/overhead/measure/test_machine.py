"""How busy each core was, from /proc/stat."""

from __future__ import annotations

import pytest

STAT_BEFORE = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\n"


STAT_AFTER = "cpu  40 0 10 170 0 0 0 0 0 0\ncpu0 35 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 120 0 0 0 0 0 0\n"


def test_busy_fractions_come_per_core_from_proc_stat() -> None:
    from loadtests.benchmarks.overhead.measure.machine import busy_fractions, core_jiffies

    fractions = busy_fractions(core_jiffies(STAT_BEFORE), core_jiffies(STAT_AFTER))
    assert fractions == {"cpu0": pytest.approx(1.0), "cpu1": pytest.approx(0.0)}
