"""The instruction-count harness's setup serves real requests: its config loads, and a gateway in
front of its canned replica answers chat requests, streamed and not (the counting itself needs
valgrind and minutes: `python -m loadtests.benchmarks.overhead.instructions`)."""

from __future__ import annotations

import httpx
import yaml

from gateway.config import parse_config
from loadtests.benchmarks.overhead.instructions import _config, _serve_replica
from loadtests.benchmarks.overhead.stack.canned import request_body
from loadtests.launch.gateway_process import GatewayProcess


def test_the_harness_gateway_answers_from_the_canned_replica(tmp_path):
    port = _serve_replica()
    raw = _config(f"http://127.0.0.1:{port}")
    config = parse_config(yaml.safe_dump(raw))
    assert config.state.health_interval_s == 3600.0  # background work stays out of the count
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(raw))
    with GatewayProcess(path, log_path=tmp_path / "gateway.log") as gateway:
        for stream in (False, True):
            reply = httpx.post(gateway.url + "/v1/chat/completions", content=request_body(stream),
                               headers={"content-type": "application/json"}, timeout=10)
            assert reply.status_code == 200, reply.text
            assert ("data: [DONE]" in reply.text) is stream
