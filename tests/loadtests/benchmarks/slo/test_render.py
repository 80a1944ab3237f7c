"""How the bench-slo section of docs/benchmarks.md compares the policies (the committed section is
checked with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

from loadtests.benchmarks.slo.render import comparison


def run(policy, good, cost):
    return {"policy": policy, "good_fraction": good, "cost_per_1k_requests_usd": cost}


def test_duet_is_compared_with_least_loaded_and_the_best_other_policy():
    line = comparison([run("duet", 0.95, 0.66), run("least-loaded", 0.93, 0.73), run("round-robin", 0.97, 0.9)])
    assert line == ("Duet 95.0% good at USD 0.660 / 1k; least-loaded 93.0% good at USD 0.730 / 1k (+2.0 points); "
                    "round-robin (best other policy) 97.0% good at USD 0.900 / 1k (-2.0 points).")
    assert comparison([run("always-fast", 0.9, 0.6)]) == ""


def test_the_prior_line_says_when_duet_had_the_profiles_own_priors() -> None:
    from loadtests.benchmarks.slo.render import prior_line

    assert "an oracle" in prior_line(None) and "predates" in prior_line(None)
    assert "an oracle" in prior_line({"standard": {"prefill": 1.0, "decode": 1.0}})
    drawn = prior_line({"standard": {"prefill": 1.3, "decode": 1.3}, "fast": {"prefill": 0.7, "decode": 0.7}})
    assert "oracle" not in drawn and "standard x1.3, fast x0.7" in drawn
