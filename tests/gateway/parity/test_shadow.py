"""Shadow checks against two simulated replicas (real processes on loopback), in process so the
decode ledger and the verdicts' records can be read: a check waits for the live requests' slack
and never charges its prefill to a live request that cannot absorb it; the fast answer a check
scores is the one its client received (whole or streamed), and the fast replica sees each
request once; a request that is not drawn keeps no answer; one that failed is not scored."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
import yaml
from prometheus_client import CollectorRegistry

from gateway.api.app import create_app
from gateway.cli.online_parity import Judge, tools
from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.config.types import DuetConfig
from gateway.flow import Attempt, ChatBody, Director, Exchange, Inbound, Ledgers, WaitingRoom, routing_hooks
from gateway.outcome import Outcome
from gateway.parity.metrics import ParityMetrics
from gateway.parity.sample import Sample
from gateway.parity.sequential import Conclusion
from gateway.parity.shadow import Job, Live, ShadowChecks, ShadowParts, shadow_body
from gateway.parity.tap import AnswerTap
from gateway.parity.verdicts import OnlineVerdicts
from gateway.proxy.forward import UpstreamCall
from gateway.proxy.http1 import Pool
from gateway.runtime import Gateway
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import InMemoryStateStore
from serving.ports import free_port
from serving.sim.server.testing import SimProcess

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
BODY = {"messages": [{"role": "user", "content": "Explain tides in two sentences."}], "max_tokens": 8,
        "temperature": 0}


@pytest.fixture(scope="module")
def sims() -> Iterator[dict[str, SimProcess]]:
    # Seeded apart: with one seed, the two draw the same words for their first unseeded request, and
    # a test comparing the fast answer with the standard one passed only after others had used them.
    with SimProcess("fast-test", "--served-model-name", "smollm2-standard", "--seed", "1") as std, \
            SimProcess("fast-test", "--served-model-name", "smollm2-fast", "--seed", "2") as fast:
        yield {"standard": std, "fast": fast}


def config_for(sims: dict[str, SimProcess], **online: Any) -> DuetConfig:
    """The demo config on the two simulators, fast allowed chat, every fast chat request drawn."""
    raw = yaml.safe_load(DEMO.read_text())
    for name, spec in raw["models"]["smollm2"]["variants"].items():
        spec["replicas"] = [{"url": sims[name].url}]
    raw["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["chat", "agent", "extraction"]
    raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": 1.0}}, **online}
    return parse_config(yaml.safe_dump(raw))


class Rig:
    def __init__(self, sims: dict[str, SimProcess], slack_wait_s: float) -> None:
        self.config = config_for(sims, slack_wait_s=slack_wait_s)
        self.store = InMemoryStateStore()
        self.decodes = DecodeLedger()
        backlog, waiting = PrefillBacklog(), WaitingRoom(8)
        self.ledgers = Ledgers(backlog, self.decodes)
        active = ActiveConfig.of(self.config)
        director = self.director = Director(lambda: active, self.store, self.ledgers, waiting,
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
        """A fast-served request whose client received a whole completion."""
        model = self.config.models["smollm2"]
        tap = AnswerTap(Sample(model.variants["standard"], model.variants["fast"], 1.0))
        tap.started(200, b"application/json")
        tap.received(orjson.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Tides."}}]}))
        return Job(request_id, {"model": "smollm2", **BODY}, "chat", model, tap.sample, self.config.online_parity,
                   Live(tap, 40.0))

    def fast_exchange(self, request_id: str) -> tuple[Exchange, Attempt]:
        """A chat request planned on the fast variant and dispatched there (as the director would)."""
        exchange = self.director.open(Inbound(ChatBody.model_validate({"model": "smollm2:fast", **BODY}),
                                              {"x-duet-task": "chat"}), request_id)
        model = exchange.plan.target.model
        replica = next(r for r in model.replicas if r.variant == "fast")
        exchange.attempt = Attempt(replica, model.variants["fast"], None)
        return exchange, exchange.attempt

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
    assert data["seed"] == shadow_body(job)[0]["seed"]  # the same seed at every retry
    greedy: dict[str, Any] = {**job.body, "temperature": 0}
    assert shadow_body(Job("req-1", greedy, "chat", None, None, None, None))[1]  # type: ignore[arg-type]


def test_a_drawn_request_that_failed_or_was_left_is_not_scored(sims: dict[str, SimProcess]) -> None:
    async def scenario() -> None:
        rig = Rig(sims, slack_wait_s=0.3)
        await rig.up()
        ended = {"cut": Outcome("r", False, 502, 0.01, 0.2, 5, 3), "left": Outcome("r", True, 499, 0.01, 0.2, 5, 3)}
        for name, outcome in ended.items():
            exchange, attempt = rig.fast_exchange(f"req-{name}")
            rig.checks.dispatched(exchange, attempt)
            assert attempt.tap is not None  # drawn (share 1): its answer is being kept
            attempt.tap.started(200, b"text/event-stream")
            attempt.tap.received(b'data: {"choices":[{"index":0,"delta":{"content":"Half"}}]}\n\n')
            rig.checks.done(exchange, outcome)
        await rig.checks.drain()
        rig.pool.close()
        assert rig.count("not_scored") == 2 and rig.count("paired") == 0
        assert rig.checks.verdicts.records() == []

    asyncio.run(scenario())


def test_a_draw_beyond_max_in_flight_keeps_no_answer(sims: dict[str, SimProcess]) -> None:
    async def scenario() -> None:
        rig = Rig(sims, slack_wait_s=0.3)
        await rig.up()
        live = rig.decodes.add("smollm2/standard/0", slack_ms=1.0, prefill_ms=0.0)  # the checks wait for slack
        for n in range(rig.config.online_parity.max_in_flight):
            exchange, attempt = rig.fast_exchange(f"req-{n}")
            rig.checks.dispatched(exchange, attempt)
            assert attempt.tap is not None
            attempt.tap.started(200, b"application/json")
            attempt.tap.received(b'{"choices":[{"index":0,"message":{"role":"assistant","content":"Tides."}}]}')
            rig.checks.done(exchange, Outcome("r", True, 200, None, 0.2, 5, 3))
        exchange, attempt = rig.fast_exchange("req-one-too-many")
        rig.checks.dispatched(exchange, attempt)
        assert attempt.tap is None and rig.count("busy") == 1
        await rig.checks.drain()
        rig.decodes.done("smollm2/standard/0", live)
        rig.pool.close()
        assert rig.count("no_slack") == rig.config.online_parity.max_in_flight

    asyncio.run(scenario())


# ---- the whole gateway in process (uvicorn on loopback), the simulators behind it ----

ASK = {"messages": [{"role": "user", "content": "Say something about the sea."}], "max_tokens": 12,
       "temperature": 1.0}  # no seed: the simulator draws new words for every request


@contextlib.asynccontextmanager
async def live_gateway(config: DuetConfig) -> AsyncIterator[tuple[httpx.AsyncClient, Gateway]]:
    """The gateway as ``duet serve`` runs it (with the real verifiers), under uvicorn in this
    process so its verdicts' records can be read."""
    built: list[Gateway] = []

    def build() -> Gateway:
        built.append(Gateway(config, parity=tools()))
        return built[0]

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(build), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done(), "the gateway did not start"
            await asyncio.sleep(0.01)
        gateway = built[0]
        for replica in config.replicas:
            await gateway.store.record_health(replica.id, True, gateway.store.now())
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client, gateway
    finally:
        server.should_exit = True
        await serving


async def until(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def finished(sim: SimProcess) -> float:
    """How many requests the simulator finished (its vLLM counter)."""
    async with httpx.AsyncClient(timeout=5) as client:
        text = (await client.get(f"{sim.url}/metrics")).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:request_success_total{"))


async def received_content(client: httpx.AsyncClient, model: str, stream: bool, task: str = "chat") -> str:
    """What the client was answered: the message's content, or its stream's content deltas joined."""
    reply = await client.post("/v1/chat/completions", json={"model": model, **ASK, "stream": stream},
                              headers={"x-duet-task": task})
    assert reply.status_code == 200, reply.text
    if not stream:
        return str(reply.json()["choices"][0]["message"]["content"])
    events = [orjson.loads(line[6:]) for line in reply.text.splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_scored_fast_answer_is_the_one_its_client_received(sims: dict[str, SimProcess], stream: bool) -> None:
    async def scenario() -> None:
        config = config_for(sims, keep_text=True, slack_wait_s=10, max_in_flight=1)
        before = {name: await finished(sim) for name, sim in sims.items()}
        async with live_gateway(config) as (client, gateway):
            assert gateway.online_parity is not None
            answers, verdicts = [], gateway.online_parity.verdicts
            for n in (1, 2):
                answers.append(await received_content(client, "smollm2:fast", stream))
                await until(lambda n=n: len(verdicts.records()) == n)  # a stream's done hook may run after its client read [DONE]
            records = verdicts.records()
        assert answers[0] != answers[1]  # a second run of the same request says something else
        assert len(records) == 2
        for answer, record in zip(answers, records, strict=True):
            assert record.texts is not None
            candidate = orjson.loads(record.texts["candidate"])
            assert candidate["choices"][0]["message"]["content"] == answer
            assert orjson.loads(record.texts["standard"])["choices"][0]["message"]["content"] != answer
        # Each request ran once on fast (the client's) and once on the standard (the check's).
        assert {name: await finished(sim) - before[name] for name, sim in sims.items()} == {"fast": 2, "standard": 2}

    asyncio.run(scenario())


def test_a_request_that_is_not_drawn_keeps_no_answer(sims: dict[str, SimProcess]) -> None:
    async def scenario() -> list[tuple[str, bool]]:
        config = config_for(sims, slack_wait_s=10)
        seen: list[tuple[str, bool]] = []
        async with live_gateway(config) as (client, gateway):
            assert gateway.online_parity is not None

            def note(exchange: Exchange, outcome: Outcome) -> None:
                assert exchange.attempt is not None
                seen.append((exchange.attempt.variant.name, exchange.attempt.tap is not None))

            gateway.director.hooks.done.insert(0, note)
            await received_content(client, "smollm2:standard", stream=True)  # no shadow variant to mirror to
            await received_content(client, "smollm2:fast", stream=True, task="agent")  # no share for agent
            await received_content(client, "smollm2:fast", stream=True)  # drawn: the one kept
            verdicts = gateway.online_parity.verdicts
            await until(lambda: len(verdicts.records()) == 1)
        return seen

    assert asyncio.run(scenario()) == [("standard", False), ("fast", False), ("fast", True)]
