"""duet demo's arithmetic and wording: replica time from a speed block, the saving or the extra
against the standard, and a clear exit when no gateway answers (the run itself:
tests/integration/test_demo.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli.local.demo import footer, per_token_seconds, show
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
