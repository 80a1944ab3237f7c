"""The prefix index through the director: a replica that prefilled a conversation's turn is
credited its blocks on the next turn, the dry run's document shows it, and a restart (a new vLLM
start time in the scrape) makes it cold again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import yaml

from gateway.api.explain import explain_plan
from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.domain import Replica
from gateway.endpoints import ChatBody, validate_body
from gateway.flow import Director, Inbound, InMemoryPrefixIndex, Ledgers, WaitingRoom, routing_hooks
from gateway.outcome import Outcome
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore
from gateway.state.vllm_metrics import VllmStats

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
HISTORY = [{"role": "system", "content": "You extract dates."},
           {"role": "user", "content": "Extract: " + "on 2026-12-04 the replica restarted; " * 60}]


class Ok:
    async def attempt(self, replica: Replica) -> str:
        return "ok"


def test_the_next_turn_finds_its_prefix_where_the_last_was_prefilled_until_that_replica_restarts():
    async def scenario() -> None:
        config = parse_config(yaml.safe_dump(DEMO))
        store = InMemoryStateStore()
        for replica in config.replicas:
            await store.record_health(replica.id, True, store.now())
            await store.record_stats(replica.id, VllmStats(process_start_time_s=1000.0), store.now())
        backlog, decodes, waiting = PrefillBacklog(), DecodeLedger(), WaitingRoom(8)
        index = InMemoryPrefixIndex(10_000)
        active = ActiveConfig.of(config)
        director = Director(lambda: active, store, Ledgers(backlog, decodes, index), waiting,
                            routing_hooks(backlog, decodes, store, waiting, index), time.monotonic)

        def inbound(messages: list[dict[str, str]]) -> Inbound:
            _, body = validate_body({"model": "smollm2", "messages": messages, "max_tokens": 8}, ChatBody)
            return Inbound(body, {"x-duet-task": "extraction"})

        first = director.open(inbound(HISTORY), "turn-1")
        assert all(c.cached_tokens == 0 for c in first.plan.candidates)
        await director.dispatch(first, Ok())
        assert first.attempt is not None
        served = first.attempt.replica.id
        director.first_token(first)
        await director.finish(first, Outcome(served, True, 200, 0.1, 0.3, 600, 8))

        turn2 = [*HISTORY, {"role": "assistant", "content": "2026-12-04"}, {"role": "user", "content": "And times?"}]
        second = director.open(inbound(turn2), "turn-2", explain=True)
        cached = {c.replica.id: c.cached_tokens for c in second.plan.candidates}
        assert cached[served] >= 256 and all(v == 0 for r, v in cached.items() if r != served)
        document = explain_plan(second.plan)
        assert document["replicas"][served]["cached_tokens"] == cached[served]

        await store.record_stats(served, VllmStats(process_start_time_s=2000.0), store.now())  # vLLM restarted
        third = director.open(inbound(turn2), "turn-2-again")
        assert all(c.cached_tokens == 0 for c in third.plan.candidates)

    asyncio.run(scenario())


def test_a_failed_attempt_teaches_the_index_nothing():
    async def scenario() -> None:
        config = parse_config(yaml.safe_dump(DEMO))
        store = InMemoryStateStore()
        for replica in config.replicas:
            await store.record_health(replica.id, True, store.now())
        backlog, decodes, waiting = PrefillBacklog(), DecodeLedger(), WaitingRoom(8)
        index = InMemoryPrefixIndex(10_000)
        active = ActiveConfig.of(config)
        director = Director(lambda: active, store, Ledgers(backlog, decodes, index), waiting,
                            routing_hooks(backlog, decodes, store, waiting, index), time.monotonic)
        _, body = validate_body({"model": "smollm2", "messages": HISTORY, "max_tokens": 8}, ChatBody)
        exchange = director.open(Inbound(body, {}), "r")
        await director.dispatch(exchange, Ok())
        assert exchange.attempt is not None
        await director.finish(exchange, Outcome(exchange.attempt.replica.id, False, 502, None, 0.1, 0, 0))
        assert all(index.blocks_held(r.id) == 0 for r in config.replicas)

    asyncio.run(scenario())
