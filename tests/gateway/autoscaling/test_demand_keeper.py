"""The demand keeper on the director's lifecycle: each client request of an autoscaled model
counts once, whatever its attempts; refused ones count when the fleet refused them, not when
the client erred; answers give their output tokens; a model without autoscaling counts nothing."""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.autoscaling.demand_keeper import DemandKeeper
from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.domain import Replica
from gateway.endpoints import ChatBody, validate_body
from gateway.errors import InvalidRequest, NoHealthyReplica, UpstreamFailed
from gateway.flow import Director, Exchange, Inbound, Ledgers, WaitingRoom, routing_hooks
from gateway.outcome import AttemptFailure, Outcome
from gateway.state.decodes import DecodeLedger
from gateway.state.demand import InMemoryDemand
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
CHAT = {"messages": [{"role": "user", "content": "hello " * 200}], "max_tokens": 16}
PATIENT = {"x-duet-latency-budget-ms": "60000", "x-duet-task": "chat"}


class Script:
    """A transport that answers "ok", or the failure status scripted for a replica id."""

    def __init__(self, failures: dict[str, int]) -> None:
        self.failures = failures

    async def attempt(self, replica: Replica) -> str | AttemptFailure:
        status = self.failures.get(replica.id)
        return "ok" if status is None else AttemptFailure(replica.id, status, "scripted", 0.01)


def autoscaled(raw: dict[str, Any] | None = None) -> dict[str, Any]:
    raw = copy.deepcopy(raw or DEMO)
    raw["models"]["smollm2"]["autoscaling"] = {"scrape_interval_s": 15, "rate_window_s": 120}
    return raw


class Rig:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.config = parse_config(yaml.safe_dump(raw))
        self.store = InMemoryStateStore()
        self.demand = InMemoryDemand(lambda: 100.0)
        backlog, decodes, waiting = PrefillBacklog(), DecodeLedger(), WaitingRoom(8)
        hooks = routing_hooks(backlog, decodes, self.store, waiting)
        DemandKeeper(self.demand).subscribe(hooks)
        active = ActiveConfig.of(self.config)
        self.director = Director(lambda: active, self.store, Ledgers(backlog, decodes), waiting, hooks, time.monotonic)

    async def up(self) -> None:
        for replica in self.config.replicas:
            await self.store.record_health(replica.id, True, self.store.now())

    def open(self, body: dict[str, Any] = CHAT, headers: dict[str, str] = PATIENT) -> Exchange:
        _, parsed = validate_body({"model": "smollm2", **body}, ChatBody)
        return self.director.open(Inbound(parsed, headers), "req-1")

    async def counted(self) -> dict[str, tuple[float, float, float | None]]:
        (window,) = await self.demand.demand("smollm2", (120.0,), 120.0)
        return {task: (d.rate_per_s, d.prompt_tokens, d.output_tokens) for task, d in window.items()}


def test_a_request_counts_once_through_a_fallback_and_its_answer_gives_the_output_tokens() -> None:
    raw = autoscaled()
    raw["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["chat"]  # two replicas may serve chat

    async def scenario() -> None:
        rig = Rig(raw)
        await rig.up()
        exchange = rig.open()
        await rig.director.admit(exchange)
        first = exchange.plan.decision.ranked[0].id
        await rig.director.dispatch(exchange, Script({first: 503}))  # fails over to the next replica
        assert exchange.attempts == 2 and exchange.attempt is not None
        await rig.director.finish(exchange, Outcome(exchange.attempt.replica.id, True, 200, 0.05, 0.5, 100, 16))
        prompt = exchange.plan.profile.input_tokens
        assert await rig.counted() == {"chat": (1.0, prompt, 16)}

    asyncio.run(scenario())


def test_a_request_every_replica_failed_counts_once() -> None:
    async def scenario() -> None:
        rig = Rig(autoscaled())
        await rig.up()
        exchange = rig.open()
        with pytest.raises(UpstreamFailed):  # refused after its attempts: counted at its first dispatch only
            await rig.director.dispatch(exchange, Script({r.id: 500 for r in rig.config.replicas}))
        assert (await rig.counted())["chat"][0] == 1.0

    asyncio.run(scenario())


def test_a_request_the_fleet_refused_counts_and_one_the_client_got_wrong_does_not() -> None:
    raw = autoscaled()
    for variant in raw["models"]["smollm2"]["variants"].values():
        variant["tools"] = False
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

    async def scenario() -> None:
        rig = Rig(raw)  # no replica is known healthy: nothing can serve the request now
        with pytest.raises(NoHealthyReplica):
            await rig.director.admit(rig.open())
        await rig.up()
        with pytest.raises(InvalidRequest):  # no variant serves tools: no replica count would help
            await rig.director.admit(rig.open({**CHAT, "tools": tools}))
        counted = await rig.counted()
        assert set(counted) == {"chat"} and counted["chat"][0] == 1.0

    asyncio.run(scenario())


def test_a_model_without_autoscaling_counts_nothing() -> None:
    async def scenario() -> None:
        rig = Rig(DEMO)
        await rig.up()
        exchange = rig.open()
        await rig.director.dispatch(exchange, Script({}))
        assert exchange.attempt is not None
        await rig.director.finish(exchange, Outcome(exchange.attempt.replica.id, True, 200, 0.05, 0.5, 100, 16))
        assert await rig.counted() == {}

    asyncio.run(scenario())
