"""Two gateway processes sharing one real redis-server, in front of simulated replicas: exact
per-key limits across both, the usage ledger, in-flight counts and breakers seen by both, and a
Redis crash in the middle of load that loses no request."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.sim.server.testing import SimProcess
from tests.redis_server import RedisServer

from .cluster import demo_config, wait_until

ADMIN_KEY = "admin-" + uuid.uuid4().hex
TIERS = {"sixty": {"requests_per_min": 60}, "unlimited": {},
         "metered": {"requests_per_min": 4, "tokens_per_min": 100_000}}
BODY = {"model": "smollm2", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 2}


@dataclass
class Pair:
    gateways: tuple[GatewayProcess, GatewayProcess]
    sims: dict[str, SimProcess]
    config_path: Path

    def key(self, tier: str, name: str | None = None) -> tuple[str, str]:
        """A new key of ``tier`` from the admin API: (key, id)."""
        spec = {"name": name or f"{tier}-{uuid.uuid4().hex[:6]}", "tier": tier}
        reply = httpx.post(self.gateways[0].url + "/admin/keys", json=spec, headers=auth(ADMIN_KEY), timeout=10)
        assert reply.status_code == 201, reply.text
        return reply.json()["key"], reply.json()["id"]

    def cli_key(self, tier: str, name: str) -> tuple[str, str]:
        """A new key of ``tier`` made with ``duet keys create`` as an operator would: (key, id)."""
        done = subprocess.run([sys.executable, "-m", "gateway.cli", "keys", "create", "--config", str(self.config_path),
                               "--name", name, "--tier", tier], capture_output=True, text=True, timeout=30, check=True)
        created = re.match(r"created (\S+) ", done.stdout)
        assert created is not None, done.stdout
        return done.stdout.strip().splitlines()[-1], created.group(1)


@contextmanager
def pair(tmp: Path, redis: RedisServer) -> Iterator[Pair]:
    with ExitStack() as stack:
        sims = {v: stack.enter_context(SimProcess("fast-test", "--served-model-name", f"smollm2-{v}"))
                for v in ("standard", "fast")}
        raw = demo_config({v: s.url for v, s in sims.items()}, store="redis", redis_url=redis.url,
                          redis_prefix=f"it{uuid.uuid4().hex[:6]}:", refresh_s=0.05,
                          # 1 s, not the default 0.25 s: this shared 2-core machine stalls processes
                          # for hundreds of ms under load, and the test is about real outages.
                          redis_timeout_s=1.0,
                          breaker={"failure_threshold": 2, "cooldown_s": 60})
        raw["access"] = {"require_keys": True, "tiers": TIERS}
        config_path = tmp / "duet.yaml"
        config_path.write_text(yaml.safe_dump(raw, sort_keys=False))
        env = {"DUET_ADMIN_KEY": ADMIN_KEY}
        gateways = [GatewayProcess(config_path, log_path=tmp / f"gateway-{i}.log", env=env) for i in range(2)]
        for gateway in gateways:
            stack.callback(gateway.stop)
        with ThreadPoolExecutor(2) as pool:  # start both at once: startup dominates this module's time
            list(pool.map(GatewayProcess.start, gateways))
        yield Pair((gateways[0], gateways[1]), sims, config_path)


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    # Persistent (append-only, fsync always): the outage test restarts it and expects the keys back.
    with RedisServer(persist_dir=tmp_path_factory.mktemp("redis-data")) as server:
        yield server


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory, redis: RedisServer) -> Iterator[Pair]:
    with pair(tmp_path_factory.mktemp("redis-pair"), redis) as made:
        yield made


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def metric(gateway: GatewayProcess, name: str, **labels: str) -> float:
    """Sum of a Prometheus sample over series matching ``labels``."""
    total = 0.0
    for line in httpx.get(gateway.url + "/metrics", timeout=5).text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


def test_a_key_allowed_60_per_minute_gets_exactly_60_of_200_across_two_gateways(gateways: Pair) -> None:
    key, key_id = gateways.cli_key("sixty", name="sixty")
    a, b = gateways.gateways

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            return await asyncio.gather(*(
                client.post((a if i % 2 else b).url + "/v1/chat/completions", json=BODY, headers=auth(key))
                for i in range(200)
            ))

    responses = asyncio.run(burst())
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 60, 429: 140}, statuses
    refused = next(r for r in responses if r.status_code == 429)
    assert int(refused.headers["retry-after"]) >= 1
    error = refused.json()["error"]
    assert error["type"] == "rate_limit_error" and error["param"] == "requests_per_min"
    assert "requests per minute" in error["message"]
    assert metric(a, "duet_rate_limited_total", limit="requests_per_min") + \
        metric(b, "duet_rate_limited_total", limit="requests_per_min") == 140

    # The ledger in Redis holds all 60, whichever gateway served them; both gateways answer the same.
    def ledger(gateway: GatewayProcess) -> list[dict[str, object]]:
        reply = httpx.get(gateway.url + "/v1/duet/usage", headers=auth(ADMIN_KEY), timeout=5)
        return [row for row in reply.json()["data"] if row["key_id"] == key_id]

    wait_until(lambda: sum(int(r["requests"]) for r in ledger(a)) == 60, what="60 requests in the ledger")
    rows = ledger(b)
    assert sum(int(r["output_tokens"]) for r in rows) == 120  # max_tokens 2, every request
    assert sum(float(r["cost_usd"]) for r in rows) > 0
    # Labelled by the key's opaque id (its name only when access.metrics_key_names is on).
    served = metric(a, "duet_key_requests_total", key=key_id) + metric(b, "duet_key_requests_total", key=key_id)
    assert served == 60


def test_ratelimit_headers_tell_a_metered_key_its_headroom_on_answers_streams_and_429s(gateways: Pair) -> None:
    """OpenAI's x-ratelimit-* headers, from the Redis quota book shared by both gateways."""
    key, _ = gateways.cli_key("metered", name="metered")
    a, b = gateways.gateways
    first = httpx.post(a.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=30)
    assert first.status_code == 200, first.text
    assert first.headers["x-ratelimit-limit-requests"] == "4"
    assert first.headers["x-ratelimit-remaining-requests"] == "3"
    assert re.fullmatch(r"(\d+(\.\d+)?s|1m0s)", first.headers["x-ratelimit-reset-requests"])
    assert first.headers["x-ratelimit-limit-tokens"] == "100000"
    used = first.json()["usage"]["total_tokens"]
    with httpx.stream("POST", b.url + "/v1/chat/completions", json={**BODY, "stream": True}, headers=auth(key),
                      timeout=30) as streamed:  # the headers come before the first byte of the stream
        assert streamed.status_code == 200
        assert streamed.headers["x-ratelimit-remaining-requests"] == "2"
        # The first answer's tokens are charged once it ended, through a's queue to Redis: maybe not yet.
        assert int(streamed.headers["x-ratelimit-remaining-tokens"]) in (100_000, 100_000 - used)
        streamed.read()
    third = httpx.post(a.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=30)
    assert third.headers["x-ratelimit-remaining-requests"] == "1"
    # a's admission goes out after the charge it queued: the first answer's tokens count now.
    assert int(third.headers["x-ratelimit-remaining-tokens"]) <= 100_000 - used
    httpx.post(b.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=30)
    refused = httpx.post(a.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=30)
    assert refused.status_code == 429 and refused.json()["error"]["param"] == "requests_per_min"
    assert refused.headers["x-ratelimit-remaining-requests"] == "0"
    assert refused.headers["x-ratelimit-limit-tokens"] == "100000"
    unlimited, _ = gateways.key("unlimited")
    free = httpx.post(a.url + "/v1/chat/completions", json=BODY, headers=auth(unlimited), timeout=30)
    assert free.status_code == 200 and not any(h.startswith("x-ratelimit-") for h in free.headers)


def test_admin_lists_and_revokes_keys_for_every_gateway(gateways: Pair) -> None:
    a, b = gateways.gateways
    key, key_id = gateways.key("unlimited")
    assert httpx.post(b.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=10).status_code == 200
    listed = httpx.get(a.url + "/admin/keys", headers=auth(ADMIN_KEY), timeout=5).json()["data"]
    assert any(k["id"] == key_id and not k["revoked"] for k in listed) and all("hash" not in k for k in listed)
    assert httpx.delete(a.url + f"/admin/keys/{key_id}", headers=auth(ADMIN_KEY), timeout=5).status_code == 200
    wait_until(lambda: httpx.post(b.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=10).status_code == 401,
               what="B refuses the revoked key")


def test_requests_without_a_valid_key_are_401_and_admin_routes_need_the_admin_key(gateways: Pair) -> None:
    a, _ = gateways.gateways
    missing = httpx.post(a.url + "/v1/chat/completions", json=BODY, timeout=10)
    wrong = httpx.post(a.url + "/v1/chat/completions", json=BODY, headers=auth("sk-duet-nope"), timeout=10)
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert wrong.json()["error"]["type"] == "authentication_error"
    key, _ = gateways.key("unlimited")
    assert httpx.get(a.url + "/v1/duet/usage", headers=auth(key), timeout=5).status_code == 401


def test_duet_usage_prints_the_ledger(gateways: Pair) -> None:
    a, _ = gateways.gateways
    key, key_id = gateways.key("unlimited")
    assert httpx.post(a.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=10).status_code == 200

    def printed() -> str:
        done = subprocess.run([sys.executable, "-m", "gateway.cli", "usage", "--url", a.url, "--key", key_id],
                              capture_output=True, text=True, timeout=30, env={"DUET_ADMIN_KEY": ADMIN_KEY, "PATH": ""})
        return done.stdout

    wait_until(lambda: re.search(rf"{key_id}\s+smollm2\s+\S+\s+chat\s+1\s", printed()) is not None, what="usage row")


def test_in_flight_on_one_gateway_is_seen_by_the_other(gateways: Pair) -> None:
    a, b = gateways.gateways
    key, _ = gateways.key("unlimited")
    slow = {**BODY, "max_tokens": 8}
    statuses: list[int] = []
    # Engine steps of ~0.5 s: each request takes seconds, so the three overlap even when this
    # shared machine delays a thread's start.
    for sim in gateways.sims.values():
        httpx.post(sim.url + "/sim/faults", json={"slowdown": 1000}, timeout=5).raise_for_status()
    try:
        threads = [threading.Thread(target=lambda: statuses.append(
            httpx.post(a.url + "/v1/chat/completions", json=slow, headers=auth(key), timeout=60).status_code))
            for _ in range(3)]
        for thread in threads:
            thread.start()
        wait_until(lambda: metric(b, "duet_replica_in_flight") == 3, timeout_s=20, what="B counts A's 3 requests in flight")
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for sim in gateways.sims.values():
            httpx.post(sim.url + "/sim/faults", json={"slowdown": 1.0}, timeout=5)
    assert statuses == [200, 200, 200]
    wait_until(lambda: metric(b, "duet_replica_in_flight") == 0, timeout_s=20, what="B sees them finish")


def test_a_breaker_tripped_on_one_gateway_is_seen_by_the_other(gateways: Pair) -> None:
    a, b = gateways.gateways
    key, _ = gateways.key("unlimited")
    standard = gateways.sims["standard"]
    pinned = {**BODY, "model": "smollm2:standard"}
    httpx.post(standard.url + "/sim/faults", json={"error_rate": 1.0, "error_kinds": [500]}, timeout=5).raise_for_status()
    try:
        for _ in range(2):  # failure_threshold
            assert httpx.post(a.url + "/v1/chat/completions", json=pinned, headers=auth(key), timeout=10).status_code == 502
        wait_until(lambda: metric(b, "duet_replica_breaker_open", replica="smollm2/standard/0") == 1,
                   what="B sees the breaker A opened")
        refused = httpx.post(b.url + "/v1/chat/completions", json=pinned, headers=auth(key), timeout=10)
        assert refused.status_code == 503
    finally:
        httpx.post(standard.url + "/sim/faults", json={"error_rate": 0.0}, timeout=5)


def test_killing_redis_mid_load_loses_no_request_and_the_gateways_recover(redis: RedisServer, gateways: Pair) -> None:
    """Last in the module: it kills the module's Redis (and restarts it). Each gateway has its
    own senders and the waits count each gateway's answers: on a busy machine one gateway could
    serve all the load while the other stalled, and then had checked no quota without Redis."""
    server, made = redis, gateways
    key, key_id = made.key("unlimited")
    statuses: Counter[int] = Counter()
    served = [0, 0]  # 200s per gateway
    counted = threading.Lock()
    stop = threading.Event()

    def load(index: int) -> None:
        with httpx.Client(timeout=15) as client:
            while not stop.is_set():
                status = client.post(made.gateways[index].url + "/v1/chat/completions", json=BODY, headers=auth(key)).status_code
                with counted:
                    statuses[status] += 1
                    served[index] += status == 200

    def each_served(at_least: list[int]) -> bool:
        with counted:
            return all(n >= floor for n, floor in zip(served, at_least, strict=True))

    workers = [threading.Thread(target=load, args=(i,), daemon=True) for i in range(len(made.gateways)) for _ in range(2)]
    for worker in workers:
        worker.start()
    wait_until(lambda: each_served([5, 5]), timeout_s=60, what="load running through both gateways")
    server.kill()
    with counted:
        before = list(served)
    wait_until(lambda: each_served([n + 10 for n in before]), timeout_s=60,
               what="each gateway serving while redis is down")
    # Each gateway answered 10 requests since the kill, at most two of them (one per sender)
    # begun before it: the others checked their key's quota, found Redis gone and let the
    # request through (decision "open").
    assert all(metric(g, "duet_quota_unavailable_total", decision="open") > 0 for g in made.gateways)
    server.start()
    with counted:
        at_restart = list(served)
    wait_until(lambda: each_served([n + 10 for n in at_restart]), timeout_s=60,
               what="each gateway serving after the restart")
    stop.set()
    for worker in workers:
        worker.join(timeout=20)
    assert set(statuses) == {200}, statuses
    # Recovered: both gateways write the shared ledger again and read shared state.
    def ledgered() -> int:
        reply = httpx.get(made.gateways[1].url + "/v1/duet/usage", headers=auth(ADMIN_KEY), timeout=5).json()
        return sum(int(r["requests"]) for r in reply["data"] if r["key_id"] == key_id)

    after_restart = ledgered()
    with httpx.Client(timeout=15) as client:
        for gateway in made.gateways:
            assert client.post(gateway.url + "/v1/chat/completions", json=BODY, headers=auth(key)).status_code == 200
    wait_until(lambda: ledgered() >= after_restart + 2, what="the ledger grows again")
