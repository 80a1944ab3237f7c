"""A real redis-server for tests: Debian's binary on a free loopback port, no persistence unless
asked, killed and restarted on demand, stopped by the test that started it."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import pytest

from serving.ports import free_port


def require_redis_server() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed (make redis-server)")
    return binary


class RedisServer:
    """``persist_dir`` turns on an fsync-always append-only file there, so data survives ``kill``
    (the outage tests restart Redis and expect the API keys to be back, as with a production one)."""

    def __init__(self, port: int | None = None, persist_dir: Path | None = None) -> None:
        self.binary = require_redis_server()
        self.port = port or free_port()
        self.persist_dir = persist_dir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def argv(self) -> list[str]:
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        if self.persist_dir is None:
            return [*argv, "--appendonly", "no"]
        return [*argv, "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.persist_dir)]

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        self.process = subprocess.Popen(self.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL, as a crash: connections drop at once, nothing is flushed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
