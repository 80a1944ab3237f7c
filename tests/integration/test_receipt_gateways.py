"""The savings receipt across two gateways (two app instances) sharing one real redis-server, in
front of simulated replicas: every request's receipt line (the access log) sums exactly to the
ledger's totals per key and tenant, whichever gateway served it, and both gateways report the
same; the metrics count the same receipts."""

from __future__ import annotations

import copy
import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from gateway.api.app import create_app
from gateway.cli.usage_savings import render_savings
from gateway.config import parse_config
from gateway.deploy.dashboard import dashboard
from gateway.runtime import Gateway
from serving.sim.server.testing import SimProcess
from tests.redis_server import RedisServer

from .cluster import demo_config, wait_until

ADMIN_KEY = "admin-" + uuid.uuid4().hex
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture(scope="module")
def sims() -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        yield {v: stack.enter_context(SimProcess("fast-test", "--served-model-name", f"smollm2-{v}")).url
               for v in ("standard", "fast")}


def config(sims: dict[str, str], redis_url: str) -> dict[str, Any]:
    """The demo pointed at the simulators, Redis shared, keys on, each variant priced by its GPUs."""
    raw = demo_config(sims, store="redis", redis_url=redis_url, redis_prefix=f"rc{uuid.uuid4().hex[:6]}:")
    raw["access"] = {"require_keys": True, "tiers": {"open": {}}}
    for name, gpus in (("standard", 4), ("fast", 1)):
        spec = raw["models"]["smollm2"]["variants"][name]
        spec.pop("price")
        spec["replica_cost"] = {"gpus": gpus, "usd_per_gpu_hour": 2.5}
    return raw


def test_receipt_lines_from_two_gateways_sum_exactly_to_the_shared_ledger(
        sims: dict[str, str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUET_ADMIN_KEY", ADMIN_KEY)
    caplog.set_level(logging.INFO, logger="duet.access")
    with RedisServer() as redis, ExitStack() as stack:
        parsed = parse_config(yaml.safe_dump(config(sims, redis.url)))
        clients = [stack.enter_context(TestClient(create_app(lambda: Gateway(copy.deepcopy(parsed))))) for _ in range(2)]
        wait_until(lambda: all(c.get("/ready").status_code == 200 for c in clients), timeout_s=20, what="both ready")
        keys = [clients[0].post("/admin/keys", json={"name": f"k{i}", "tier": "open", "tenant": tenant}, headers=ADMIN)
                for i, tenant in enumerate(("acme", "acme", ""))]
        assert [k.status_code for k in keys] == [201, 201, 201], keys[0].text
        sent: dict[str, str] = {}  # request id -> key id
        for i in range(24):
            key = keys[i % 3].json()
            request_id = f"rq{uuid.uuid4().hex[:12]}"
            body = {"model": ("smollm2:standard", "smollm2:fast", "smollm2")[i // 3 % 3], "max_tokens": 3 + i % 5,
                    "messages": [{"role": "user", "content": "Say hello. " * (1 + i)}], "stream": i % 4 == 0}
            reply = clients[i % 2].post("/v1/chat/completions", json=body,
                                        headers={"authorization": f"Bearer {key['key']}", "x-request-id": request_id})
            assert reply.status_code == 200, reply.text
            sent[request_id] = key["id"]
        lines = {r.fields["request_id"]: r.fields for r in caplog.records  # type: ignore[attr-defined]
                 if getattr(r, "fields", {}).get("request_id") in sent}
        assert len(lines) == len(sent)

        expected: dict[str, dict[str, int]] = {}
        for request_id, line in lines.items():
            sums = expected.setdefault(sent[request_id], dict.fromkeys(("requests", "fast_requests", "gpu_us", "nano_usd",
                                                                        "standard_gpu_us", "standard_nano_usd"), 0))
            sums["requests"] += 1
            sums["fast_requests"] += int(line["fast"])
            sums["gpu_us"] += round(line["gpu_seconds"] * 1e6)
            sums["nano_usd"] += round(line["gpu_usd"] * 1e9)
            sums["standard_gpu_us"] += round(line["standard_gpu_seconds"] * 1e6)
            sums["standard_nano_usd"] += round(line["standard_gpu_usd"] * 1e9)
        assert sum(s["fast_requests"] for s in expected.values()) >= 8  # the pinned ones at least
        assert all(s["standard_nano_usd"] > s["nano_usd"] for s in expected.values())  # fast is cheaper here

        def report(client: TestClient) -> dict[str, Any]:
            reply = client.get("/v1/duet/savings", headers=ADMIN)
            assert reply.status_code == 200, reply.text
            payload: dict[str, Any] = reply.json()
            return payload

        def ledgered(payload: dict[str, Any]) -> dict[str, dict[str, int]]:
            return {row["key_id"]: {name: row[name] for name in expected[row["key_id"]]} for row in payload["keys"]
                    if row["key_id"] in expected}

        # Settles reach Redis through each gateway's link queue: wait until all are in, then both agree.
        wait_until(lambda: ledgered(report(clients[0])) == expected, timeout_s=20, what="every receipt in the ledger")
        second = report(clients[1])
        assert ledgered(second) == expected

        acme = next(t for t in second["tenants"] if t["tenant"] == "acme")
        mine = [expected[keys[0].json()["id"]], expected[keys[1].json()["id"]]]
        assert acme["gpu_us"] == sum(s["gpu_us"] for s in mine)
        assert acme["standard_nano_usd"] == sum(s["standard_nano_usd"] for s in mine)
        assert {row["variant"] for row in second["parity"]} == {"smollm2:fast"}
        assert "savings for" in render_savings(second) and "acme" in render_savings(second)

        refused = clients[1].get("/v1/duet/savings", params={"since": "2027-01", "month": "2026-12"}, headers=ADMIN)
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "since"

        scraped = [client.get("/metrics").text for client in clients]
        counted = sum(_sample(text, "duet_receipt_standard_gpu_seconds_total") for text in scraped)
        assert counted == pytest.approx(sum(s["standard_gpu_us"] for s in expected.values()) / 1e6)
        spent = sum(_sample(text, "duet_receipt_gpu_usd_total") for text in scraped)
        assert spent == pytest.approx(sum(s["nano_usd"] for s in expected.values()) / 1e9)
        # The dashboard's savings panels read only series the gateways export.
        panels = " ".join(t["expr"] for p in dashboard()["panels"] for t in p["targets"] if "Savings" in p["title"])
        assert set(re.findall(r"duet_receipt_\w+", panels)) <= {name for text in scraped
                                                                for name in re.findall(r"^(duet_receipt_\w+)\{", text, re.M)}


def _sample(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))
