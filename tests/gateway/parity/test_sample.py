"""Which dispatched requests online parity draws, and which side a drawn one runs as shadow work:
a fast-served request is checked against the standard (the standard is run); a standard-served one
is mirrored to a shadow-stage variant (the candidate is run). Nothing else is drawn."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.flow import (
    ActiveConfig,
    Attempt,
    ChatBody,
    CompletionBody,
    DecodeLedger,
    Director,
    Hooks,
    Inbound,
    InMemoryStateStore,
    Ledgers,
    PrefillBacklog,
    WaitingRoom,
    parse_config,
)
from gateway.flow.exchange import Exchange
from gateway.parity import shadow_sample

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
CHAT = ChatBody.model_validate({"model": "smollm2", "messages": [{"role": "user", "content": "Hi."}]})
COMPLETION = CompletionBody.model_validate({"model": "smollm2", "prompt": "Hi."})


def director_for(shares: dict[str, float] | None, fast_in_shadow: bool) -> Director:
    raw = yaml.safe_load(DEMO.read_text())
    if shares is not None:
        raw["online_parity"] = {"shadow_checks": {"smollm2:fast": shares}}
    if fast_in_shadow:
        raw["models"]["smollm2"]["variants"]["fast"]["rollout"] = {"stage": "shadow"}
    active = ActiveConfig.of(parse_config(yaml.safe_dump(raw)))
    return Director(lambda: active, InMemoryStateStore(), Ledgers(PrefillBacklog(), DecodeLedger()),
                    WaitingRoom(8), Hooks(), time.perf_counter)


def dispatched(served: str, request_id: str = "req-1", body: Any = CHAT, task: str = "chat",
               shares: dict[str, float] | None = None, fast_in_shadow: bool = False,
               director: Director | None = None) -> tuple[Exchange, Attempt]:
    """A request planned by the director and dispatched to a replica of ``served``."""
    director = director or director_for(shares, fast_in_shadow)
    exchange = director.open(Inbound(body, {"x-duet-task": task}), request_id)
    model = exchange.plan.target.model
    replica = next(r for r in model.replicas if r.variant == served)
    exchange.attempt = Attempt(replica, model.variants[served], None)
    return exchange, exchange.attempt


def test_a_fast_served_request_runs_the_standard_as_its_shadow_side() -> None:
    sample = shadow_sample(*dispatched("fast", shares={"chat": 1.0}))
    assert sample is not None and sample.live_is_candidate
    assert (sample.candidate.name, sample.shadow_side.name) == ("fast", "standard")


def test_a_standard_served_request_is_mirrored_to_a_shadow_stage_variant() -> None:
    sample = shadow_sample(*dispatched("standard", shares={"chat": 1.0}, fast_in_shadow=True))
    assert sample is not None and not sample.live_is_candidate
    assert (sample.standard.name, sample.shadow_side.name) == ("standard", "fast")


@pytest.mark.parametrize("case", [
    {"served": "fast"},  # online parity off
    {"served": "fast", "shares": {"agent": 1.0}},  # no share for chat
    {"served": "fast", "shares": {"chat": 1.0}, "task": "agent"},  # nor for this request's task
    {"served": "standard", "shares": {"chat": 1.0}},  # a standard with no shadow-stage variant
    {"served": "fast", "shares": {"chat": 1.0}, "body": COMPLETION},  # the verifiers read chat only
], ids=["off", "other-task-share", "other-task", "nothing-to-mirror", "not-chat"])
def test_nothing_else_is_drawn(case: dict[str, Any]) -> None:
    assert shadow_sample(*dispatched(**case)) is None


def test_a_share_draws_that_share_of_request_ids_the_same_way_every_time() -> None:
    director = director_for({"chat": 0.3}, fast_in_shadow=False)
    drawn = [shadow_sample(*dispatched("fast", f"req-{i}", director=director)) is not None for i in range(400)]
    assert 90 <= sum(drawn) <= 150  # 30% of 400 is 120, sd 9.2
    again = director_for({"chat": 0.3}, fast_in_shadow=False)
    assert drawn[:50] == [shadow_sample(*dispatched("fast", f"req-{i}", director=again)) is not None for i in range(50)]
