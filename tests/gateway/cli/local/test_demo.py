"""duet demo's arithmetic and wording: replica time from a speed block, the saving or the extra
against the standard, and a clear exit when no gateway answers (the run itself:
tests/integration/test_demo.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli.local.demo import FALLBACK_BUDGET_MS, footer, per_token_seconds, show, tight_budget_ms
from gateway.speed import SpeedPrior
from serving.ports import free_port


def test_a_slower_speed_block_costs_more_replica_seconds_per_token() -> None:
    fast = per_token_seconds(SpeedPrior(prefill_tokens_per_s=2000.0, decode_s_per_token=0.03, step_s_per_seq=0.001))
    slow = per_token_seconds(SpeedPrior(prefill_tokens_per_s=1000.0, decode_s_per_token=0.06, step_s_per_seq=0.002))
    assert slow[0] == pytest.approx(2 * fast[0], rel=0.01) and slow[1] == pytest.approx(2 * fast[1], rel=0.01)
    assert fast[0] == pytest.approx(1 / 2000.0, rel=0.01)  # a prompt token: its prefill time


@pytest.mark.parametrize(("costs", "said"), [
    ([(0.5, 1.0)], "(50% saved)"),
    ([(1.2, 1.0)], "(20% more: speed bought where a budget asked for it)"),
])
def test_the_footer_says_what_was_saved_or_spent_against_the_standard(costs: list[tuple[float, float]], said: str) -> None:
    text = footer("http://g", Path("duet.yaml"), costs, "standard")
    assert said in text and "all on standard" in text and "duet explain --config duet.yaml" in text


def test_no_gateway_is_a_clear_failure(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert show(url, None) == 1
    assert f"duet demo: {url} did not answer" in capsys.readouterr().err


def explained(**e2e_by_replica: tuple[str, float | None]) -> dict[str, object]:
    """A dry run's replicas block: replica -> (variant, predicted e2e ms, or None when filtered)."""
    return {"replicas": {name: {"variant": variant, **({"prediction_ms": {"e2e": e2e}} if e2e is not None else {})}
                         for name, (variant, e2e) in e2e_by_replica.items()}}


def test_the_tight_budget_sits_between_the_fastest_variant_and_the_standard() -> None:
    plan = explained(s0=("standard", 2000.0), s1=("standard", 2400.0), f0=("fast-spec", 1000.0),
                     f1=("fast-spec", 1600.0))
    assert tight_budget_ms(plan) == pytest.approx(1500.0)  # the best replica of each variant


@pytest.mark.parametrize("plan", [
    explained(s0=("standard", 900.0), f0=("fast-spec", 1000.0)),  # the fast variant predicted slower
    explained(s0=("standard", 900.0), f0=("fast-spec", None)),    # filtered out (its task refused)
    explained(f0=("fast-spec", 500.0)),                           # no standard replica routable
])
def test_no_faster_variant_keeps_the_fallback_budget(plan: dict[str, object]) -> None:
    assert tight_budget_ms(plan) == FALLBACK_BUDGET_MS
