"""The soak's bookkeeping: the request mix and the summary's leak arithmetic (the run itself is
``make soak``)."""

from __future__ import annotations

import argparse
import random
from collections import Counter

import pytest

from loadtests.benchmarks.soak.bench import IDLE_FD_SLACK, Tally, error_verdict, request_mix, summarise, verdict


def test_the_mix_draws_every_kind_and_only_invalid_requests_are_invalid() -> None:
    rng = random.Random(3)
    drawn = [request_mix(rng) for _ in range(2000)]
    kinds = Counter(kind for kind, *_ in drawn)
    assert set(kinds) == {"stream", "chat", "completion", "pinned", "budget", "invalid"}
    assert 0.35 < kinds["stream"] / 2000 < 0.45
    for kind, _, body, _ in drawn:
        assert (body["max_tokens"] < 1) == (kind == "invalid")


def test_summary_measures_growth_after_warm_up_and_counts_the_lost() -> None:
    tally = Tally()
    tally.samples = [(t, 50_000 if t < 60 else (100_000 if t < 300 else 105_000), 90, 4) for t in range(0, 600, 5)]
    tally.record("stream", "ok")
    tally.record("chat", "lost", "reset")
    args = argparse.Namespace(duration=600.0, warmup_s=60.0)
    summary = summarise(tally, capacity=10.0, rate=7.0, args=args)
    assert summary["rss_growth_pct"] == pytest.approx(5.0)
    assert summary["lost"] == 1 and summary["lost_examples"] == ["chat: reset"]
    assert summary["fds_after_warmup"] == summary["fds_at_end"] == 90


@pytest.mark.parametrize(("kind", "status", "error", "verdict"), [
    ("invalid", 400, {"message": "m", "type": "invalid_request_error"}, "ok"),
    ("chat", 429, {"message": "m", "type": "rate_limit_error"}, "clear_error"),
    ("chat", 502, {"message": "m", "type": "upstream_error"}, "lost"),  # a gateway 5xx is lost, however clear
    ("chat", 503, {"message": "m", "type": "service_unavailable"}, "lost"),
    ("chat", 404, {}, "lost"),
])
def test_a_gateway_5xx_is_lost_and_a_clear_4xx_is_not(kind: str, status: int, error: object, verdict: str) -> None:
    assert error_verdict(kind, status, error) == verdict


def _summary(**changes: object) -> dict[str, object]:
    summary: dict[str, object] = {"lost": 0, "rss_growth_pct": 0.5, "fds_idle_before": 40, "fds_idle_after": 40,
                                  "gateway_alive_at_end": True, "gateway_exit_code_on_sigterm": 0}
    return summary | changes


def test_a_clean_soak_passes_and_each_broken_rule_is_named() -> None:
    assert verdict(_summary()) == []
    assert verdict(_summary(fds_idle_after=40 + IDLE_FD_SLACK)) == []
    assert verdict(_summary(fds_idle_after=41 + IDLE_FD_SLACK)) == [f"idle descriptors 40 -> {41 + IDLE_FD_SLACK}"]
    assert verdict(_summary(lost=2, rss_growth_pct=12.0)) == ["2 requests lost", "RSS grew 12.0%"]
    assert verdict(_summary(gateway_alive_at_end=False, gateway_exit_code_on_sigterm=-9)) == \
        ["gateway died", "SIGTERM exit code -9"]
