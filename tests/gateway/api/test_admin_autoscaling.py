"""GET /admin/autoscaling explains duet_desired_replicas: per autoscaled model, the demand per
task it was sized on and, per variant, the tasks placed, batch, busy replicas, floor and count;
behind the admin key like the other admin routes. /metrics serves the same numbers."""

from __future__ import annotations

import asyncio
import copy
import uuid
from pathlib import Path

import pytest
import redis.asyncio
import yaml
from starlette.testclient import TestClient

from gateway import runtime
from gateway.api.app import create_app
from gateway.config import parse_config
from gateway.runtime import Gateway
from gateway.state.demand import InMemoryDemand
from gateway.state.redis.demand import SharedDemand
from tests.redis_server import RedisServer, require_redis_server

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
ADMIN_KEY = "admin-key-for-tests"


def test_the_admin_route_explains_each_variants_count_and_metrics_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demand is counted on a clock the test moves (5 s between the arrivals and the read,
    inside the 15 s short window): on the wall clock a busy machine let more than 15 s pass and
    the arrivals had left the window before the route read them."""
    monkeypatch.setenv("DUET_ADMIN_KEY", ADMIN_KEY)
    now = [1000.0]
    monkeypatch.setattr(runtime, "build_demand", lambda config, link: InMemoryDemand(lambda: now[0]))
    raw = copy.deepcopy(DEMO)
    raw["models"]["smollm2"]["autoscaling"] = {"scrape_interval_s": 15, "rate_window_s": 120}
    config = parse_config(yaml.safe_dump(raw))
    gateways: list[Gateway] = []

    def build() -> Gateway:
        gateways.append(Gateway(config))
        return gateways[-1]

    with TestClient(create_app(build)) as client:
        for _ in range(30):
            gateways[0].demand.arrived("smollm2", "chat", 200, 120.0)
            now[0] += 0.1
        now[0] += 2.0
        assert client.get("/admin/autoscaling").status_code in (401, 403)
        reply = client.get("/admin/autoscaling", headers={"authorization": f"Bearer {ADMIN_KEY}"})
        metrics = client.get("/metrics").text
    assert reply.status_code == 200
    (model,) = reply.json()["data"]
    assert model["model"] == "smollm2" and model["fresh"] is True
    assert model["windows_s"] == {"short": 15, "long": 120}
    assert model["demand"]["chat"]["sized"]["rate_per_s"] > 0
    variants = {v["variant"]: v for v in model["variants"]}
    standard = variants["standard"]
    assert standard["tasks"] == {"chat": 1.0} and standard["floor"] == 1 and standard["busy_replicas"] > 0
    assert set(standard) == {"variant", "tasks", "batch", "busy_replicas", "floor", "desired"}
    assert f'duet_desired_replicas{{model="smollm2",variant="standard"}} {float(standard["desired"])}' in metrics



def test_gateways_sharing_redis_count_into_one_shared_demand() -> None:
    """``state.store: redis`` gives every gateway the shared demand store (its sums are tested in
    ``tests/gateway/state/redis/test_demand.py``): both gateways' counts land in the same hashes
    and both read them."""
    require_redis_server()
    raw = copy.deepcopy(DEMO)
    raw["models"]["smollm2"]["autoscaling"] = {"scrape_interval_s": 15, "rate_window_s": 120}
    prefix = f"t{uuid.uuid4().hex[:8]}:"

    async def main(url: str) -> tuple[int, list[bool]]:
        config = parse_config(yaml.safe_dump({**raw, "state": {"store": "redis", "redis_url": url, "redis_prefix": prefix}}))
        gateways = [Gateway(config), Gateway(config)]
        for gateway in gateways:
            await gateway.start()
        try:
            assert all(isinstance(gateway.demand, SharedDemand) for gateway in gateways)
            for gateway, count in zip(gateways, (30, 10), strict=True):
                for _ in range(count):
                    gateway.demand.arrived("smollm2", "chat", 200, 120.0)
            read = [(await gateway.fleet.refresh())["smollm2"] for gateway in gateways]  # each sends its own first
            client = redis.asyncio.Redis.from_url(url)
            keys = await client.keys(f"{prefix}demand:smollm2:*")
            total = sum([int(await client.hget(key, "a:chat") or 0) for key in keys])
            await client.aclose()
            return total, [need.fresh and need.short["chat"].rate_per_s > 0 for need in read]
        finally:
            for gateway in gateways:
                await gateway.stop()

    with RedisServer() as server:
        total, read = asyncio.run(main(server.url))
    assert total == 40 and read == [True, True]
