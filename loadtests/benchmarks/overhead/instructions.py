"""``python -m loadtests.benchmarks.overhead.instructions``: the gateway's own work per request, counted in
machine instructions under valgrind's callgrind, so that a change can be compared before and after
on a noisy machine (wall-clock req/s moved by 20% between identical runs here).

``duet serve`` runs under callgrind in front of a replica that answers the overhead benchmark's
canned vLLM bodies (an asyncio server in this process, not counted); this process sends the
requests one at a time and then stops the gateway. callgrind counts every instruction of the
gateway's process, start-up included: running N and 2N requests and taking the difference leaves
the cost of N requests through the whole serving path (uvicorn, Duet, the upstream client). With
``PYTHONHASHSEED=0`` and background work slowed to once an hour, the count is repeatable.

    python -m loadtests.benchmarks.overhead.instructions --requests 200 [--stream] [--tree /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from loadtests.benchmarks.overhead.stack.canned import SERVED_MODEL_NAME, canned_responses, request_body

ROOT = Path(__file__).resolve().parents[3]


async def _replica(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A keep-alive HTTP/1.1 replica with canned answers: chat (JSON or SSE), /health, /metrics."""
    canned = canned_responses()
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            break  # the gateway closed a pooled connection, or the run ended
        length = re.search(rb"(?i)content-length:\s*(\d+)", head)
        body = await reader.readexactly(int(length.group(1))) if length else b""
        if head.startswith(b"POST") and b'"stream":true' in body.replace(b" ", b""):
            chunks = b"".join(b"%x\r\n%b\r\n" % (len(e), e) for e in canned.chat_sse_events) + b"0\r\n\r\n"
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                         + chunks)
        else:
            payload = canned.chat_json if head.startswith(b"POST") else (
                canned.metrics_text if b"/metrics" in head.split(b"\r\n", 1)[0] else b"{}")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%b"
                         % (len(payload), payload))
        await writer.drain()
    writer.close()


def _config(url: str) -> dict[str, Any]:
    """The demo's routing and state, one model with its two variants on the in-process replica, and
    background work (health checks, scrapes) slowed to once an hour after the first round."""
    raw = yaml.safe_load((ROOT / "deploy" / "config" / "demo.yaml").read_text())
    raw = copy.deepcopy(raw)
    for variant in raw["models"]["smollm2"]["variants"].values():
        variant["served_model_name"] = SERVED_MODEL_NAME if variant["kind"] == "full" else SERVED_MODEL_NAME + "-fast"
        variant["replicas"] = [{"url": url}]
    raw["state"].update(health_interval_s=3600.0, scrape_interval_s=3600.0, stale_after_s=7200.0)
    return raw


def _serve_replica() -> int:
    """Starts the canned replica on a thread of its own; returns its port."""
    ready: list[int] = []
    started = threading.Event()

    async def serve() -> None:
        server = await asyncio.start_server(_replica, "127.0.0.1", 0)
        ready.append(server.sockets[0].getsockname()[1])
        started.set()
        await server.serve_forever()

    threading.Thread(target=asyncio.run, args=(serve(),), daemon=True).start()
    started.wait(10)
    return ready[0]


def count(requests: int, stream: bool, tree: Path, replica_port: int) -> int:
    """Instructions callgrind counted in a gateway process that served ``requests`` requests."""
    with tempfile.TemporaryDirectory() as tmp:
        config, out = Path(tmp) / "duet.yaml", Path(tmp) / "callgrind.out"
        config.write_text(yaml.safe_dump(_config(f"http://127.0.0.1:{replica_port}")))
        port = _free_port()
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
        gateway = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m", "gateway.cli",
             "serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
             "--no-access-log"], env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                _wait_ready(client, gateway)
                body = request_body(stream)
                for _ in range(requests):
                    reply = client.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
                    if reply.status_code != 200:
                        raise SystemExit(f"request failed with {reply.status_code}: {reply.text[:200]}")
        finally:
            gateway.send_signal(signal.SIGTERM)
            gateway.wait(300)
        totals = re.search(rb"^(?:totals|summary):\s*(\d+)", out.read_bytes(), re.MULTILINE)
        assert totals is not None, "no totals in callgrind's output"
        return int(totals.group(1))


def _wait_ready(client: httpx.Client, gateway: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 600  # start-up under callgrind is ~50x slower
    while time.monotonic() < deadline:
        if gateway.poll() is not None:
            raise SystemExit(f"the gateway exited with {gateway.returncode}")
        try:
            if client.get("/ready").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit("the gateway was not ready in 600 s")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="N: the runs serve N and 2N requests")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose gateway is measured")
    args = parser.parse_args()
    port = _serve_replica()
    low = count(args.requests, args.stream, args.tree, port)
    high = count(2 * args.requests, args.stream, args.tree, port)
    per_request = (high - low) / args.requests
    mode = "stream" if args.stream else "non-stream"
    print(f"{args.tree}: {mode}: {per_request:,.0f} instructions per request (N={args.requests})")
    print(f'{{"tree": "{args.tree}", "mode": "{mode}", "instructions_per_request": {per_request:.0f}}}')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
