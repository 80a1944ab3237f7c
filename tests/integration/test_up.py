"""`duet up --sim`: replicas and gateway from one command, and a clean stop of the whole tree."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import httpx

from gateway.testing import free_port

from .cluster import wait_until


def test_duet_up_sim_serves_and_stops_its_replicas(tmp_path):
    port = free_port()
    log = tmp_path / "up.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "up", "--sim", "--port", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "duet ready on" in log.read_text(), 60, "ready line")
        replica_ports = [int(p) for p in re.findall(r"http://127\.0\.0\.1:(\d+)  ready", log.read_text())]
        assert len(replica_ports) == 2
        response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                              json={"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
        assert response.status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0

    def replicas_gone() -> bool:
        for replica_port in replica_ports:
            try:
                httpx.get(f"http://127.0.0.1:{replica_port}/health", timeout=0.5)
                return False
            except httpx.HTTPError:
                continue
        return True

    wait_until(replicas_gone, 10, "replicas stopped")
