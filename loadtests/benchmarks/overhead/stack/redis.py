"""The Redis that ``duet-redis`` shares its state through: Debian's redis-server, pinned to the
load core (beside the backend, away from the gateway's core), no persistence, on a free port."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from loadtests.benchmarks.overhead.stack.launch import Unavailable
from loadtests.benchmarks.overhead.stack.processes import PinnedProcess, start_pinned, wait_until
from serving.ports import free_port


def redis_command(port: int) -> list[str] | None:
    """redis-server's command line for the run, or None when it is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(run_dir: Path, core: int) -> tuple[PinnedProcess, str] | Unavailable:
    """Start redis-server on ``core``; return it and its URL once it answers PING."""
    port = free_port()
    command = redis_command(port)
    if command is None:
        return Unavailable("duet-redis", "redis-server is not installed (make redis-server)")
    process = start_pinned("redis-server", command, core, run_dir / "redis.log")
    wait_until(process, lambda: answers(port), timeout_s=20)
    return process, f"redis://127.0.0.1:{port}/0"
