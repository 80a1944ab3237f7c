"""GET /admin/autoscaling explains duet_desired_replicas: per autoscaled model, the demand per
task it was sized on and, per variant, the tasks placed, batch, busy replicas, floor and count;
behind the admin key like the other admin routes. /metrics serves the same numbers."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from gateway.api.app import create_app
from gateway.config import parse_config
from gateway.runtime import Gateway

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
ADMIN_KEY = "admin-key-for-tests"


def test_the_admin_route_explains_each_variants_count_and_metrics_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUET_ADMIN_KEY", ADMIN_KEY)
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
