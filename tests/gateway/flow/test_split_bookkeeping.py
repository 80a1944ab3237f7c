"""A split request's bookkeeping: its prompt waits in the prefill replica's backlog, not the
decode replica's, and its prefill stalls no decode on the decode replica (the decode ledger's
claim there is nothing), so routing sees each pool's load as it is."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import yaml

from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.domain import Replica
from gateway.endpoints import ChatBody, validate_body
from gateway.flow import Director, Exchange, Inbound, Ledgers, WaitingRoom, routing_hooks
from gateway.flow.plan import decode_claim
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
NIXL = "NixlConnector"
PREFILL, DECODE, WHOLE = "smollm2/standard/0", "smollm2/standard/1", "smollm2/standard/2"


class Accepted:
    async def attempt(self, replica: Replica) -> str:
        return "ok"


def pd_demo() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(yaml.safe_dump(DEMO))
    # The third replica has no connector: it serves requests whole only (with one it would also
    # decode transferred KV, as vLLM's kv_both does).
    raw["models"]["smollm2"]["variants"]["standard"]["replicas"] = [
        {"url": f"http://127.0.0.1:{8100 + i}", "engine": {"role": role, "kv_connector": NIXL} if role != "both"
         else {"role": role}} for i, role in enumerate(("prefill", "decode", "both"))]
    raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
    for profile in raw["routing"]["profiles"].values():
        profile["filters"].append("engine-role")
    raw["routing"]["disaggregation"] = {"rule": "threshold"}
    return raw


def dispatched(content: str) -> tuple[Exchange, PrefillBacklog]:
    config = parse_config(yaml.safe_dump(pd_demo()))
    store, waiting, backlog, decodes = InMemoryStateStore(), WaitingRoom(8), PrefillBacklog(), DecodeLedger()
    active = ActiveConfig.of(config)
    director = Director(lambda: active, store, Ledgers(backlog, decodes), waiting,
                        routing_hooks(backlog, decodes, store, waiting), time.monotonic)

    async def scenario() -> Exchange:
        for replica in config.replicas:
            await store.record_health(replica.id, True, store.now())
        _, body = validate_body({"model": "smollm2:standard", "messages": [{"role": "user", "content": content}]},
                                ChatBody)
        exchange = director.open(Inbound(body, {}, splits=True), "req-1")
        assert await director.dispatch(exchange, Accepted()) == "ok"
        return exchange

    return asyncio.run(scenario()), backlog


def test_a_split_prompt_waits_in_the_prefill_replicas_backlog_and_stalls_no_decode() -> None:
    exchange, backlog = dispatched("Tell me about the sea. " * 40)
    assert exchange.attempt is not None and exchange.attempt.replica.id == DECODE
    assert set(backlog.tokens) == {PREFILL}
    claim = decode_claim(exchange.plan)
    assert claim.prefill_ms[DECODE] == 0.0 and claim.prefill_ms[WHOLE] > 0.0


def test_a_whole_prompt_waits_in_its_own_replicas_backlog() -> None:
    exchange, backlog = dispatched("Hi")
    assert exchange.attempt is not None and exchange.attempt.replica.id == WHOLE
    assert set(backlog.tokens) == {WHOLE}
