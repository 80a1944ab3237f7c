"""The director's lifecycle with the routing hooks subscribed, on plain data: the attempt loop's
bookkeeping, refusals typed by the blocking plugin, and admission's waiting."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.detect import TaskDetector
from gateway.domain import Replica
from gateway.endpoints import ChatBody, validate_body
from gateway.errors import InvalidRequest, RateLimited
from gateway.flow import Director, Exchange, Hooks, Inbound, Ledgers, WaitingRoom, routing_hooks
from gateway.flow import plan as plan_module
from gateway.outcome import AttemptFailure, Outcome
from gateway.runtime import store_settings
from gateway.state.decodes import DecodeLedger
from gateway.state.lengths import LengthSettings
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
# The attempt loop is tested with both variants eligible for chat: the demo keeps fast off chat (its
# parity report refuses it), which would leave one ranked replica.
DEMO["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["chat", "coding", "agent", "extraction"]
# ... and with the words detector, which is confident that CHAT ("hello" x 200) is chat: the blend
# detector (the default) abstains on it, which would leave fast out for want of parity on every task.
DEMO["routing"]["task_detector"] = {"kind": "words"}


class Script:
    """A transport that answers per replica id: an AttemptFailure status, or "ok"."""

    def __init__(self, answers: dict[str, int | str]) -> None:
        self.answers = answers
        self.tried: list[str] = []

    async def attempt(self, replica: Replica) -> str | AttemptFailure:
        self.tried.append(replica.id)
        answer = self.answers.get(replica.id, "ok")
        if isinstance(answer, int):
            return AttemptFailure(replica.id, answer, "scripted", 0.01)
        return answer


class Rig:
    """The director over the routing hooks, built from a config as the gateway builds it. The
    store ages replica state on ``store_clock`` (the wall clock unless a test holds the time)."""

    def __init__(self, raw: dict[str, Any] | None = None, max_queued: int = 8,
                 store_clock: Callable[[], float] = time.monotonic) -> None:
        self.config = parse_config(yaml.safe_dump(raw or DEMO))
        self.store = InMemoryStateStore(store_settings(self.config), clock=store_clock)
        self.backlog, self.decodes = PrefillBacklog(), DecodeLedger()
        self.waiting = WaitingRoom(max_queued)
        self.hooks: Hooks = routing_hooks(self.backlog, self.decodes, self.store, self.waiting)
        active = ActiveConfig.of(self.config)
        self.director = Director(lambda: active, self.store, Ledgers(self.backlog, self.decodes), self.waiting,
                                 self.hooks, time.monotonic)
        self.replicas = {r.variant: r for r in self.config.replicas}

    async def up(self) -> None:
        for replica in self.config.replicas:
            await self.store.record_health(replica.id, True, self.store.now())

    def open(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> Exchange:
        _, parsed = validate_body({"model": "smollm2", **body}, ChatBody)
        return self.director.open(Inbound(parsed, headers or {}), "req-1")


CHAT = {"messages": [{"role": "user", "content": "hello " * 200}], "max_tokens": 16}


def test_a_failed_attempt_leaves_no_bookkeeping_and_the_answer_keeps_its_own() -> None:
    async def scenario() -> None:
        rig = Rig()
        await rig.up()
        exchange = rig.open(CHAT, {"x-duet-latency-budget-ms": "60000"})
        ranked = [r.id for r in exchange.plan.decision.ranked]
        script = Script({ranked[0]: 503})
        assert await rig.director.dispatch(exchange, script) == "ok"
        assert script.tried == ranked[:2]
        assert exchange.failed_attempts == 1 and exchange.route.endswith(";fallback")
        served = ranked[1]
        assert set(rig.decodes.least_slack) <= {served}  # nothing left behind on the failed replica
        assert dict(rig.backlog.tokens) == {served: exchange.plan.profile.input_tokens}
        assert rig.store.snapshot()[served].in_flight == 1 and rig.store.snapshot()[ranked[0]].in_flight == 0
        rig.director.first_token(exchange)
        assert dict(rig.backlog.tokens) == {}
        await rig.director.finish(exchange, Outcome(served, True, 200, 0.05, 0.5, 100, 16))
        await rig.director.finish(exchange, Outcome(served, True, 200, 0.05, 0.5, 100, 16))  # a second end: no-op
        assert rig.store.snapshot()[served].in_flight == 0
        assert dict(rig.decodes.least_slack) == {}

    asyncio.run(scenario())


def test_a_cancelled_attempt_still_ends_in_the_store_and_the_ledgers() -> None:
    class Hanging:
        async def attempt(self, replica: Replica) -> str:
            await asyncio.sleep(10)
            return "late"

    async def scenario() -> None:
        rig = Rig()
        await rig.up()
        exchange = rig.open(CHAT)
        task = asyncio.ensure_future(rig.director.dispatch(exchange, Hanging()))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all(state.in_flight == 0 for state in rig.store.snapshot().values())
        assert dict(rig.backlog.tokens) == {} and dict(rig.decodes.least_slack) == {}

    asyncio.run(scenario())


@pytest.mark.parametrize("filter_name", ["tools", "no-tool-calls-here"])
def test_no_variant_with_tools_is_the_clients_400_whatever_the_filter_is_called(filter_name: str) -> None:
    raw = copy.deepcopy(DEMO)
    for variant in raw["models"]["smollm2"]["variants"].values():
        variant["tools"] = False
    routing = raw["routing"]
    for plugin in routing["plugins"]:
        if plugin["type"] == "tools-supported":
            plugin["name"] = filter_name
    for profile in routing["profiles"].values():
        profile["filters"] = [filter_name if f == "tools" else f for f in profile["filters"]]

    async def scenario() -> None:
        rig = Rig(raw)
        await rig.up()
        tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        exchange = rig.open({**CHAT, "tools": tools})
        assert exchange.plan.decision.blocked_by is not None
        assert exchange.plan.decision.blocked_by.type == "tools-supported"
        with pytest.raises(InvalidRequest) as info:
            await rig.director.admit(exchange)
        assert info.value.status == 400 and info.value.param == "tools"

    asyncio.run(scenario())


def _full(raw: dict[str, Any]) -> dict[str, Any]:
    """The demo with one slot per replica, so one request in flight fills each."""
    raw = copy.deepcopy(raw)
    for variant in raw["models"]["smollm2"]["variants"].values():
        variant.setdefault("speed", {})["max_num_seqs"] = 1
    return raw


async def _wait_then_wake(rig: Rig) -> Any:
    """Fills every replica (one slot each), opens a request that must wait for a slot, then
    finishes the first holder, which wakes it; returns the waiter once admitted."""
    holders = []
    for replica in rig.config.replicas:
        holder = rig.open(CHAT, {"x-duet-latency-budget-ms": "60000"})
        await rig.director.dispatch(holder, Script({r.id: 503 for r in rig.config.replicas if r.id != replica.id}))
        holders.append(holder)
    waiter = rig.open(CHAT, {"x-duet-latency-budget-ms": "60000"})
    admitted = asyncio.ensure_future(rig.director.admit(waiter))
    await asyncio.sleep(0.05)
    assert not admitted.done() and len(rig.waiting) == 1
    first = holders[0]
    assert first.attempt is not None
    await rig.director.finish(first, Outcome(first.attempt.replica.id, True, 200, 0.05, 0.5, 100, 16))
    await asyncio.wait_for(admitted, 1.0)
    return waiter


def test_a_request_waits_for_a_slot_and_goes_when_a_finished_request_frees_one() -> None:
    async def scenario() -> None:
        rig = Rig(_full(DEMO))
        await rig.up()
        waiter = await _wait_then_wake(rig)
        assert waiter.plan.decision.ranked

    asyncio.run(scenario())


def test_a_waiting_request_is_detected_once_however_often_it_is_planned(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wake-up plans the waiter again (classify runs again: the replicas changed); the detector
    ran once, at its first plan, and the later plan read that answer."""
    planned: list[object] = []
    detected: list[object] = []
    classify, detect = plan_module.classify, TaskDetector.detect_messages
    monkeypatch.setattr(plan_module, "classify", lambda arrival, *a: planned.append(arrival.body) or classify(arrival, *a))
    monkeypatch.setattr(TaskDetector, "detect_messages", lambda self, m: detected.append(m) or detect(self, m))

    async def scenario() -> None:
        rig = Rig(_full(DEMO))
        assert rig.config.policy.detection is not None
        await rig.up()
        waiter = await _wait_then_wake(rig)
        body = waiter.inbound.body
        assert isinstance(body, ChatBody)
        assert planned.count(body) >= 2
        assert [m for m in detected if m is body.messages] == [body.messages]

    asyncio.run(scenario())


def test_a_sheddable_request_is_refused_at_once_when_every_replica_is_full() -> None:
    async def scenario() -> None:
        rig = Rig(_full(DEMO))
        await rig.up()
        for replica in rig.config.replicas:
            holder = rig.open(CHAT)
            await rig.director.dispatch(holder, Script({r.id: 503 for r in rig.config.replicas if r.id != replica.id}))
        refused: list[int] = []
        rig.hooks.refused.append(lambda exchange, error: refused.append(error.status))
        with pytest.raises(RateLimited):
            await rig.director.admit(rig.open(CHAT, {"x-duet-priority": "sheddable"}))
        assert refused == [429]

    asyncio.run(scenario())


def test_finished_answers_teach_the_next_plans_their_tasks_output_length() -> None:
    """The length keeper (a ``done`` subscriber) records each good answer's length; once enough
    have finished, a request without a forced length is planned with it (within max_tokens)."""

    async def scenario() -> None:
        rig = Rig()
        await rig.up()
        body = {**CHAT, "max_tokens": 1500}
        typical = rig.open(body).plan.profile.expected_output_tokens
        for _ in range(LengthSettings().min_samples):
            exchange = rig.open(body)
            served = exchange.plan.decision.ranked[0].id
            await rig.director.dispatch(exchange, Script({}))
            await rig.director.finish(exchange, Outcome(served, True, 200, 0.05, 2.0, 100, 700))
        failed = rig.open(body)
        await rig.director.dispatch(failed, Script({}))
        await rig.director.finish(failed, Outcome(failed.attempt.replica.id, False, 502, None, 0.1, 100, 5))
        learned = rig.open(body).plan.profile.expected_output_tokens
        assert typical != learned and abs(learned - 700) <= 0.1 * 700
        assert rig.open({**CHAT, "max_tokens": 300}).plan.profile.expected_output_tokens == 300

    asyncio.run(scenario())
