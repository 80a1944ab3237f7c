"""How the Soak section of docs/reliability.md reads the soak summaries (the committed section is
checked with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import random

import pytest

from loadtests.benchmarks.soak import render as soak_docs


def test_the_trend_fit_tells_load_from_a_leak() -> None:
    rng = random.Random(0)
    flying = [rng.randint(0, 30) for _ in range(120)]
    load_only = [[t * 5.0, 0, 40 + 2 * f, f] for t, f in enumerate(flying)]
    leaking = [[t * 5.0, 0, 40 + 2 * f + t * 5.0 / 60, f] for t, f in enumerate(flying)]  # one more a minute
    per_request, per_ten_minutes = soak_docs.descriptor_trend(load_only)
    assert per_request == pytest.approx(2.0) and per_ten_minutes == pytest.approx(0.0, abs=1e-6)
    assert soak_docs.descriptor_trend(leaking)[1] == pytest.approx(10.0)
    assert soak_docs.descriptor_trend([[t, 0, 40] for t in range(100, 200)]) is None  # no in-flight counts


def test_a_summary_from_before_the_idle_counts_is_judged_by_its_own_rule_and_says_so() -> None:
    old = {"lost": 0, "rss_growth_pct": 0.5, "fds_after_warmup": 70.5, "fds_at_end": 82}
    assert soak_docs.verdict_line(old).startswith("**FAIL** by the harness of the time")
    assert soak_docs.verdict_line(old | {"fds_at_end": 75}).startswith("**PASS** by the harness of the time")
    assert soak_docs.verdict_line({"failed_rules": []}) == "**PASS**"
    assert soak_docs.verdict_line({"failed_rules": ["1 requests lost"]}) == "**FAIL**: 1 requests lost"
