"""Starting a real gateway process for tests, load tests and benchmarks: ``duet serve`` on a free
loopback port, waited on until /health answers, stopped (SIGTERM, then SIGKILL) on exit.

A free port is free only when it is picked: on a busy machine another test's server can bind it
before the gateway does, answer its readiness probe, and take the test's requests (seen once: an
admin route answering 200 where this gateway had admin off). So a probe's answer counts only
when the process started here holds the listening socket; where another does, the gateway is
restarted on a fresh port (a port the caller named is kept, and the error said)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx
import psutil

from serving.ports import free_port

PORT_ATTEMPTS = 3


class GatewayProcess:
    def __init__(
        self,
        config_path: str | Path,
        *,
        port: int | None = None,
        log_path: str | Path | None = None,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        ready_path: str = "/ready",
        timeout_s: float = 30.0,
    ) -> None:
        self.config_path = Path(config_path)
        self._port_named = port is not None
        self.port = port or free_port()
        self.log_path = Path(log_path) if log_path else self.config_path.with_suffix(".gateway.log")
        self._extra_args = extra_args
        self._env = {**os.environ, **(env or {})}
        self._ready_path = ready_path
        self._timeout_s = timeout_s
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GatewayProcess:
        for attempt in range(1, PORT_ATTEMPTS + 1):
            if self._start_once():
                return self
            self.stop()
            if self._port_named or attempt == PORT_ATTEMPTS:
                raise RuntimeError(f"port {self.port} is held by another process; log: {self.log_path.read_text()[-2000:]}")
            self.port = free_port()
        raise AssertionError("unreachable")

    def _start_once(self) -> bool:
        """True once this gateway answers readiness on its port; False when another process holds the port."""
        argv = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(self.config_path),
                "--host", "127.0.0.1", "--port", str(self.port), *self._extra_args]
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self._env, start_new_session=True)
        deadline = time.monotonic() + self._timeout_s
        while True:
            if self.process.poll() is not None:
                if _listener(self.port) is not None:
                    return False  # it could not bind: the port was taken
                raise RuntimeError(f"gateway exited with {self.process.returncode}; log: {self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + self._ready_path, timeout=1.0).status_code == 200:
                    holder = _listener(self.port)
                    if holder is None or holder in _tree(self.process.pid):
                        return True
                    return False
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"gateway not ready after {self._timeout_s} s; log: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def stop(self, timeout_s: float = 10.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _listener(port: int) -> int | None:
    """The pid listening on 127.0.0.1:``port``, None when none or when this user may not see it."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                pid: int | None = conn.pid
                return pid
    except psutil.Error:
        return None
    return None


def _tree(pid: int) -> set[int]:
    try:
        process = psutil.Process(pid)
        return {pid, *(child.pid for child in process.children(recursive=True))}
    except psutil.Error:
        return {pid}
