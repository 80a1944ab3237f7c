"""The rollout stage through the director: a canary takes its share of a task's live requests,
the same request id always routes alike, and a shadow variant serves pinned requests only."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import yaml

from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.endpoints import ChatBody, validate_body
from gateway.flow import Director, Hooks, Inbound, Ledgers, WaitingRoom, routing_hooks
from gateway.routing.rollout import request_draw
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
CHAT = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}


def director_with(rollout: dict[str, Any]) -> Director:
    raw = yaml.safe_load(DEMO.read_text())
    fast = raw["models"]["smollm2"]["variants"]["fast"]
    fast["rollout"] = rollout
    fast["allowed_tasks"] = ["chat", "coding"]  # the stage alone decides here
    routing = raw["routing"]
    if not any(p["type"] == "rollout-stage" for p in routing["plugins"]):
        routing["plugins"].append({"type": "rollout-stage", "name": "rollout"})
        for profile in routing["profiles"].values():
            profile["filters"].append("rollout")
    config = parse_config(yaml.safe_dump(raw))
    store = InMemoryStateStore()
    for replica in config.replicas:
        asyncio.run(store.record_health(replica.id, True, store.now()))
    backlog, decodes, waiting = PrefillBacklog(), DecodeLedger(), WaitingRoom(8)
    hooks: Hooks = routing_hooks(backlog, decodes, store, waiting)
    active = ActiveConfig.of(config)
    return Director(lambda: active, store, Ledgers(backlog, decodes), waiting, hooks, time.monotonic)


def variant_for(director: Director, request_id: str, model: str = "smollm2", task: str = "chat") -> str | None:
    _, body = validate_body({"model": model, **CHAT}, ChatBody)
    return director.open(Inbound(body, {"x-duet-task": task}), request_id).plan.decision.variant


def test_in_full_rollout_chat_goes_to_the_fast_variant():
    # The premise of the other tests: without a stage, the demo sends this chat to fast.
    assert variant_for(director_with({"stage": "full"}), "req-0") == "fast"


def test_a_canary_takes_its_share_of_a_task_and_none_of_the_others():
    director = director_with({"stage": "canary", "canary_shares": {"chat": 0.3}})
    ids = [f"req-{i}" for i in range(600)]
    chosen = {i: variant_for(director, i) for i in ids}
    fast = [i for i in ids if chosen[i] == "fast"]
    # Exactly the requests whose draw falls under the share, and about 30% of them (binomial sd 11).
    assert fast == [i for i in ids if request_draw(i) < 0.3]
    assert abs(len(fast) - 180) < 5 * 11.2
    assert all(variant_for(director, i) == chosen[i] for i in ids[:50])  # the same id routes alike
    assert all(variant_for(director, i, task="coding") == "standard" for i in ids[:50])  # coding: no share


def test_a_shadow_variant_serves_pinned_requests_only():
    director = director_with({"stage": "shadow"})
    assert {variant_for(director, f"req-{i}") for i in range(100)} == {"standard"}
    assert variant_for(director, "req-1", model="smollm2:fast") == "fast"
