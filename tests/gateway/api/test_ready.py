"""/ready reflects a configured Redis store: a Redis that does not answer at start is found at
start and /ready says not ready and why; once it answered, losing it leaves the gateway ready but
degraded (routing on local state), said in /ready and duet_redis_up. Against a real redis-server
on a free port, absent at first."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.api.app import readiness
from gateway.config import parse_config
from gateway.runtime import Gateway
from serving.ports import free_port
from tests.redis_server import RedisServer, require_redis_server

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


async def until(condition: Callable[[], bool], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def test_ready_follows_redis_from_unreachable_at_start_to_up_to_lost(caplog: pytest.LogCaptureFixture) -> None:
    require_redis_server()
    port = free_port()
    config = parse_config(yaml.safe_dump(yaml.safe_load(DEMO.read_text())))
    server = RedisServer(port=port)

    async def main() -> list[dict[str, Any]]:
        gateway = Gateway(config, state_url=f"redis://127.0.0.1:{port}/0")
        await gateway.start()
        reports = [readiness(gateway)]
        try:
            await asyncio.to_thread(server.start)
            await until(lambda: readiness(gateway)["store"]["shared"])
            reports.append(readiness(gateway))
            await asyncio.to_thread(server.kill)
            await until(lambda: not readiness(gateway)["store"]["shared"])
            reports.append(readiness(gateway))
            reports.append({"metrics": gateway.telemetry.render().decode()})
        finally:
            await gateway.stop()
            server.stop()
        return reports

    with caplog.at_level(logging.ERROR, logger="gateway.runtime"):
        at_start, up, lost, metrics = asyncio.run(main())
    assert at_start["ready"] is False
    reason = "redis unreachable (ConnectionError)"
    assert at_start["store"] == {"kind": "redis", "ready": False, "shared": False, "reason": reason}
    assert any("did not answer at start" in r.getMessage() and "quotas fail open" in r.getMessage() for r in caplog.records)
    assert up["store"] == {"kind": "redis", "ready": True, "shared": True, "reason": None}
    assert lost["store"]["ready"] is True and lost["store"]["shared"] is False and "unreachable" in lost["store"]["reason"]
    assert "duet_redis_up 0.0" in metrics["metrics"]
    assert str(port) not in str(at_start)  # no address on an open route


def test_ready_has_no_store_section_without_redis() -> None:
    gateway = Gateway(parse_config(DEMO.read_text()))
    assert "store" not in readiness(gateway)
