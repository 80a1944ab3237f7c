"""The gateway's ``done`` bookkeeping for the savings receipt, through the director: the receipt
is made once at the outcome from the tokens charged, on the variant that served and on the
model's standard, and the telemetry and the access log record that same receipt."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
import yaml

from gateway.access.off import OpenAccess
from gateway.access.receipts.receipt import NO_RECEIPT, Receipt, receipt_for
from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.domain import Replica
from gateway.endpoints import ChatBody, validate_body
from gateway.flow import Director, Exchange, Inbound, Ledgers, WaitingRoom, gateway_hooks, routing_hooks
from gateway.outcome import Outcome
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore
from gateway.telemetry import Telemetry

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())


class Answer:
    async def attempt(self, replica: Replica) -> str:
        return "ok"


def served(model: str, status: int) -> tuple[Exchange, Telemetry]:
    """One request for ``model`` (a pinned name) through a director with the gateway's hooks,
    ended with ``status``, 300 prompt and 40 output tokens."""
    config = parse_config(yaml.safe_dump(DEMO))
    store, telemetry, waiting = InMemoryStateStore(), Telemetry(), WaitingRoom(8)
    backlog, decodes = PrefillBacklog(), DecodeLedger()
    hooks = gateway_hooks(routing_hooks(backlog, decodes, store, waiting), OpenAccess(), telemetry)
    active = ActiveConfig.of(config)
    director = Director(lambda: active, store, Ledgers(backlog, decodes), waiting, hooks, time.monotonic)

    async def scenario() -> Exchange:
        for replica in config.replicas:
            await store.record_health(replica.id, True, store.now())
        _, body = validate_body({"model": model, "messages": [{"role": "user", "content": "hi"}]}, ChatBody)
        exchange = director.open(Inbound(body, {}), "req-1")
        assert await director.dispatch(exchange, Answer()) == "ok"
        assert exchange.attempt is not None and exchange.receipt is NO_RECEIPT  # not before the outcome
        await director.finish(exchange, Outcome(exchange.attempt.replica.id, status < 400, status, 0.1, 1.0, 300, 40))
        return exchange

    return asyncio.run(scenario()), telemetry


def counted(telemetry: Telemetry, name: str) -> float:
    return sum(s.value for m in telemetry.registry.collect() for s in m.samples if s.name == name)


@pytest.mark.parametrize("model", ["smollm2:standard", "smollm2:fast"])
def test_the_receipt_is_the_step_models_for_the_variant_that_served(model: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="duet.access")
    exchange, telemetry = served(model, 200)
    assert exchange.attempt is not None
    variants = exchange.plan.target.model.variants
    assert exchange.attempt.variant.name == model.split(":")[1]
    expected = receipt_for(exchange.attempt.variant, variants["standard"], exchange.plan.profile.task, 300, 40)
    assert exchange.receipt == expected
    if model.endswith(":standard"):
        assert (expected.standard_gpu_us, expected.fast) == (expected.gpu_us, False)
    else:
        assert expected.fast and expected.standard_gpu_us > expected.gpu_us > 0
    assert counted(telemetry, "duet_receipt_gpu_seconds_total") == pytest.approx(expected.gpu_us / 1e6)
    assert counted(telemetry, "duet_receipt_standard_gpu_seconds_total") == pytest.approx(expected.standard_gpu_us / 1e6)
    (line,) = [r.fields for r in caplog.records if hasattr(r, "fields")]
    assert round(line["gpu_seconds"] * 1e6) == expected.gpu_us and line["fast"] == expected.fast


def test_a_failed_request_has_an_empty_receipt_that_says_where_it_went() -> None:
    exchange, telemetry = served("smollm2:fast", 502)
    assert exchange.receipt == Receipt(fast=True)
    assert counted(telemetry, "duet_receipt_requests_total") == 1
