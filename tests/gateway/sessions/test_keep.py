"""Sessions: when a session keeps or leaves its variant, and a 100-turn conversation through the
director that never bounces between variants."""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.decision import Decision
from gateway.domain import Prediction, Replica
from gateway.endpoints import ChatBody, validate_body
from gateway.flow import Director, Inbound, Ledgers, WaitingRoom, routing_hooks
from gateway.outcome import Outcome
from gateway.sessions import Move, Seat, Sessions, keep_seat
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.prefix_index import InMemoryPrefixIndex
from gateway.state.store import InMemoryStateStore
from tests.gateway.routing.factories import FAST, STANDARD, candidate, request

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())


def chat(messages: list[dict[str, Any]], **extra: Any) -> ChatBody:
    _, body = validate_body({"model": "smollm2", "messages": messages, **extra}, ChatBody)
    assert isinstance(body, ChatBody)
    return body


SYSTEM = {"role": "system", "content": "You are terse."}
FIRST = {"role": "user", "content": "What is a KV cache?"}


def decision(variant: str, ranked: list[Replica], fits: dict[str, bool], meets: bool = True) -> Decision:
    predictions = {r.id: Prediction(100.0 if fits[r.id] else 5000.0, 100.0 if fits[r.id] else 5000.0, 1.0)
                   for r in ranked}
    return Decision("m", variant, tuple(ranked), "cheapest", meets, predictions)


STD0, STD1, FAST0 = candidate(STANDARD, 0), candidate(STANDARD, 1), candidate(FAST, 0)
ALL = (STD0, STD1, FAST0)


@pytest.mark.parametrize(("seat", "routed", "fits", "variant", "head", "moved", "why"), [
    # the router agrees: the session's replica first
    (Seat("standard", STD1.replica.id), "standard", {}, "standard", STD1.replica.id, None, None),
    # the router prefers standard, fast still fits: the session keeps fast
    (Seat("fast", FAST0.replica.id), "standard", {}, "fast", FAST0.replica.id, None, None),
    # fast would now miss its budget and standard meets it: it moves up, for the budget
    (Seat("fast", FAST0.replica.id), "standard", {FAST0.replica.id: False}, "standard", STD0.replica.id, "fast",
     Move.BUDGET),
    # the router prefers fast (cheaper): a session on standard never moves down
    (Seat("standard", STD0.replica.id), "fast", {}, "standard", STD0.replica.id, None, None),
    # ...even when standard misses its budget
    (Seat("standard", STD0.replica.id), "fast", {STD0.replica.id: False, STD1.replica.id: False}, "standard",
     STD0.replica.id, None, None),
    # its replica misses the budget, another of its variant meets it: same variant, the other replica
    (Seat("standard", STD1.replica.id), "standard", {STD1.replica.id: False}, "standard", STD0.replica.id, None, None),
])
def test_a_session_keeps_its_variant_unless_the_budget_forces_it_up(seat, routed, fits, variant, head, moved, why):
    ranked = [c.replica for c in ALL if c.variant.name == routed] + [c.replica for c in ALL if c.variant.name != routed]
    fit = {c.replica.id: fits.get(c.replica.id, True) for c in ALL}
    kept, verdict = keep_seat("k", seat, request(ttft_budget_ms=1000), ALL, decision(routed, ranked, fit))
    assert (kept.variant, kept.ranked[0].id) == (variant, head)
    assert (verdict.moved_from, verdict.why) == (moved, why)
    assert sorted(r.id for r in kept.ranked) == sorted(r.id for r in ranked)  # nothing dropped or added


@pytest.mark.parametrize(("task", "why"), [("summarize", Move.PARITY), ("chat", Move.UNAVAILABLE)])
def test_a_variant_that_cannot_take_the_request_any_more_is_left_and_the_verdict_says_why(task, why):
    # The router saw no fast replica survive: parity does not cover summarize; for chat, fast is down.
    ranked = [STD0.replica, STD1.replica]
    made = decision("standard", ranked, {r.id: True for r in ranked})
    kept, verdict = keep_seat("k", Seat("fast", FAST0.replica.id, 4), request(task=task), ALL, made)
    assert kept == made
    assert (verdict.moved_from, verdict.why, verdict.turn) == ("fast", why, 5)
    assert verdict.header().endswith(f"moved=fast->standard; why={why}")


def test_a_pinned_request_is_not_moved_by_its_session():
    ranked = [FAST0.replica]
    made = decision("fast", ranked, {FAST0.replica.id: True})
    kept, verdict = keep_seat("k", Seat("standard", STD0.replica.id), request(pinned_variant="fast"), ALL, made)
    assert kept == made and verdict.moved_from is None


def test_sessions_are_bounded():
    sessions = Sessions(100)
    for i in range(10_000):
        sessions.sit(f"s{i}", "fast", "r")
    assert len(sessions) == 100 and sessions.seat("s9999") is not None and sessions.seat("s0") is None


def round_robin_config() -> Any:
    """The demo's replicas with fast proven for chat and agent, under the round-robin baseline:
    a policy that changes its mind about the variant from one request to the next."""
    raw = copy.deepcopy(DEMO)
    raw["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["chat", "agent"]
    raw["routing"]["plugins"].append({"type": "round-robin", "name": "rotate"})
    raw["routing"]["profiles"]["default"]["objective"] = "rotate"
    # The turns ("tell me more xxx") name no task the detector is sure of: it would send them all
    # to standard, and this test is about sessions, so the rules decide (chat).
    raw["routing"]["task_detector"] = {"enabled": False}
    return parse_config(yaml.safe_dump(raw))


class Ok:
    async def attempt(self, replica: Replica) -> str:
        return "ok"


async def converse(turns: int, sessions: Sessions | None, coding_from: int | None = None,
                   open_on_fast: bool = False) -> list[tuple[str, str]]:
    """A conversation through the director: (variant, x-duet-session value) per turn. From turn
    ``coding_from`` on, the turns are coding (the fast variant is not proven for it), until 10
    later; ``open_on_fast`` pins the first turn to fast."""
    config = round_robin_config()
    store = InMemoryStateStore()
    for replica in config.replicas:
        await store.record_health(replica.id, True, store.now())
    backlog, decodes, waiting = PrefillBacklog(), DecodeLedger(), WaitingRoom(8)
    prefixes = InMemoryPrefixIndex(10_000)
    hooks = routing_hooks(backlog, decodes, store, waiting, prefixes, sessions)
    active = ActiveConfig.of(config)
    director = Director(lambda: active, store, Ledgers(backlog, decodes, prefixes, sessions), waiting, hooks,
                        time.monotonic)
    messages: list[dict[str, Any]] = [SYSTEM]
    served = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"turn {turn}: tell me more " + "x" * (turn % 7)})
        coding = coding_from is not None and coding_from <= turn < coding_from + 10
        headers = {"x-duet-task": "coding"} if coding else {}
        # The client keeps the system prompt and the opening question, and trims the middle to fit.
        window = messages if turn < 40 else [SYSTEM, messages[1], *messages[-10:]]
        model = "smollm2:fast" if turn == 0 and open_on_fast else "smollm2"
        _, body = validate_body({"model": model, "messages": window, "max_tokens": 8}, ChatBody)
        exchange = director.open(Inbound(body, headers), f"req-{turn}")
        await director.dispatch(exchange, Ok())
        assert exchange.attempt is not None
        served.append((exchange.attempt.replica.variant, "" if exchange.plan.session is None else exchange.plan.session.header()))
        await director.finish(exchange, Outcome(exchange.attempt.replica.id, True, 200, 0.05, 0.2, 50, 8))
        messages.append({"role": "assistant", "content": "more"})
    return served


def changes(variants: list[str]) -> int:
    return sum(a != b for a, b in zip(variants, variants[1:], strict=False))


def test_without_sessions_this_policy_bounces_between_variants():
    served = asyncio.run(converse(100, None))
    assert changes([v for v, _ in served]) >= 10  # the control: the policy alone changes its mind often


def test_a_session_never_bounces_in_a_100_turn_conversation():
    served = asyncio.run(converse(100, Sessions(1000)))
    variants = [v for v, _ in served]
    assert changes(variants) == 0
    assert all("moved" not in header for _, header in served)
    assert served[-1][1].startswith("id=") and "turn=100" in served[-1][1]


def test_a_session_moves_up_once_when_parity_forces_it_and_never_back():
    served = asyncio.run(converse(100, Sessions(1000), coding_from=50, open_on_fast=True))
    variants = [v for v, _ in served]
    assert changes(variants) == 1
    moved_at = variants.index("standard")
    assert moved_at == 50
    assert "moved=fast->standard; why=parity" in served[moved_at][1]
    assert all(v == "standard" for v in variants[moved_at:])  # back to chat at 60: fast is cheaper, it stays
    assert sum("moved" in header for _, header in served) == 1
