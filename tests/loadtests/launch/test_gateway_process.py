"""A test's gateway answers on its own port: a readiness answer from another process that took the
port first does not count (the race a free port leaves open on a busy machine)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from loadtests.launch import gateway_process
from loadtests.launch.gateway_process import GatewayProcess
from tests.integration.recording_replica import RecordingReplica, demo_config


class _Impostor(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"impostor")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def impostor():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _config(tmp_path: Path, replica: RecordingReplica) -> Path:
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(demo_config({"standard": replica.url, "fast": replica.url}), sort_keys=False))
    return path


def test_a_port_taken_before_the_gateway_binds_is_left_for_a_fresh_one(tmp_path, impostor, monkeypatch):
    ports = iter([impostor])
    real_free_port = gateway_process.free_port
    monkeypatch.setattr(gateway_process, "free_port", lambda: next(ports, None) or real_free_port())
    with RecordingReplica() as replica, GatewayProcess(_config(tmp_path, replica), log_path=tmp_path / "g.log") as gateway:
        assert gateway.port != impostor
        assert httpx.get(gateway.url + "/ready", timeout=5).text != "impostor"


def test_a_named_port_another_process_holds_is_an_error_not_a_gateway(tmp_path, impostor):
    with RecordingReplica() as replica, pytest.raises(RuntimeError, match=f"port {impostor} is held by another process"):
        GatewayProcess(_config(tmp_path, replica), port=impostor, log_path=tmp_path / "g.log").start()
