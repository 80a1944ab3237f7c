"""Shadow checks against two simulated replicas (real processes on loopback), in process so the
decode ledger can be read: a check waits for the live requests' slack and never charges its
prefill to a live request that cannot absorb it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from gateway.cli.online_parity import Judge
from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.flow import Director, Ledgers, WaitingRoom, routing_hooks
from gateway.parity.metrics import ParityMetrics
from gateway.parity.sequential import Conclusion
from gateway.parity.shadow import Job, ShadowChecks, ShadowParts, shadow_body
from gateway.parity.verdicts import OnlineVerdicts
from gateway.proxy.forward import UpstreamCall
from gateway.proxy.http1 import Pool
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore
from serving.sim.testing import SimProcess

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
BODY = {"messages": [{"role": "user", "content": "Explain tides in two sentences."}], "max_tokens": 8,
        "temperature": 0}


@pytest.fixture(scope="module")
def sims() -> Iterator[dict[str, SimProcess]]:
    with SimProcess("fast-test", "--served-model-name", "smollm2-standard") as std, \
            SimProcess("fast-test", "--served-model-name", "smollm2-fast") as fast:
        yield {"standard": std, "fast": fast}


class Rig:
    def __init__(self, sims: dict[str, SimProcess], slack_wait_s: float) -> None:
        raw = yaml.safe_load(DEMO.read_text())
        for name, spec in raw["models"]["smollm2"]["variants"].items():
            spec["replicas"] = [{"url": sims[name].url}]
        raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": 1.0}}, "slack_wait_s": slack_wait_s}
        self.config = parse_config(yaml.safe_dump(raw))
        self.store = InMemoryStateStore()
        self.decodes = DecodeLedger()
        backlog, waiting = PrefillBacklog(), WaitingRoom(8)
        self.ledgers = Ledgers(backlog, self.decodes)
        active = ActiveConfig.of(self.config)
        director = Director(lambda: active, self.store, self.ledgers, waiting,
                            routing_hooks(backlog, self.decodes, self.store, waiting), time.perf_counter)
        self.pool = Pool(connect_timeout_s=2.0, idle_timeout_s=30.0)
        self.metrics = ParityMetrics(CollectorRegistry())
        self.concluded: list[tuple[str, str, Conclusion]] = []

        async def on_conclusion(variant: str, task: str, conclusion: Conclusion) -> None:
            self.concluded.append((variant, task, conclusion))

        parts = ShadowParts(director, self.ledgers, lambda request: UpstreamCall(self.pool, request), Judge(),
                            self.metrics, on_conclusion, lambda: self.config)
        self.checks = ShadowChecks(parts, OnlineVerdicts())

    async def up(self) -> None:
        for replica in self.config.replicas:
            await self.store.record_health(replica.id, True, self.store.now())

    def job(self, request_id: str) -> Job:
        model = self.config.models["smollm2"]
        return Job(request_id, {"model": "smollm2", **BODY}, "chat", model, model.variants["standard"],
                   model.variants["fast"], self.config.online_parity)

    def count(self, result: str) -> float:
        return self.metrics.checks.labels("smollm2:fast", "chat", result)._value.get()


def test_a_check_waits_out_a_live_request_without_slack_and_charges_it_nothing(sims: dict[str, SimProcess]) -> None:
    async def scenario() -> tuple[float, float]:
        rig = Rig(sims, slack_wait_s=0.3)
        await rig.up()
        standard = "smollm2/standard/0"
        # A live request on the standard that can take 1 ms more stall: no prompt fits in that.
        live = rig.decodes.add(standard, slack_ms=1.0, prefill_ms=0.0)
        await rig.checks.check(rig.job("req-tight"))
        tight_stall = rig.decodes.done(standard, live)
        # One with 60 s of slack: the check goes, and the ledger charges its prefill to it.
        live = rig.decodes.add(standard, slack_ms=60_000.0, prefill_ms=0.0)
        await rig.checks.check(rig.job("req-loose"))
        loose_stall = rig.decodes.done(standard, live)
        rig.pool.close()
        assert rig.count("no_slack") == 1 and rig.count("paired") == 1
        assert rig.checks.verdicts.state("smollm2:fast", "chat").pairs == 1
        return tight_stall, loose_stall

    tight_stall, loose_stall = asyncio.run(scenario())
    assert tight_stall == 0.0  # the shadow prompt never ran beside the request that could not take it
    assert loose_stall > 0.0  # the ledger does see shadow prompts: the first zero is not vacuous


def test_the_shadow_body_is_reproducible() -> None:
    job = Job("req-1", {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True},
                        "temperature": 0.7}, "chat", None, None, None, None)  # type: ignore[arg-type]
    data, deterministic = shadow_body(job)
    assert not deterministic and "stream" not in data and "model" not in data
    assert data["seed"] == shadow_body(job)[0]["seed"]  # the same seed for both sides and every retry
    greedy: dict[str, Any] = {**job.body, "temperature": 0}
    assert shadow_body(Job("req-1", greedy, "chat", None, None, None, None))[1]  # type: ignore[arg-type]
