"""``duet epp``'s process: the gateway's parts (``gateway.runtime.Gateway``: config, replica
state and monitor, keys and quotas, telemetry, the director with its hooks) behind a gRPC server
that speaks ``envoy.service.ext_proc.v3.ExternalProcessor`` (one stream per HTTP request,
``gateway.epp.stream``) and the gRPC health service the protocol asks for: ``liveness``
(the process answers), ``readiness`` and the ext_proc service itself (every model has a
healthy replica, as the proxy's ``/ready`` says). Prometheus' ``duet_*`` metrics on
``--metrics-port`` when given."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvloop
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from grpc_health.v1 import health_pb2
from prometheus_client import start_http_server

from gateway.config import load_config
from gateway.discovery.api import ApiSettings
from gateway.epp.rpc import Call, HealthService, RpcServer
from gateway.epp.stream import PickerStream
from gateway.epp.wire import EXT_PROC_SERVICE, PROCESS_PATH
from gateway.flow import Health
from gateway.logs import configure_logging
from gateway.runtime import Gateway

log = logging.getLogger(__name__)

READINESS_POLL_S = 0.5


@dataclass(frozen=True, slots=True)
class PickerOptions:
    host: str = "127.0.0.1"
    port: int = 9002
    metrics_port: int | None = None
    # Endpoints after the primary in each pick (0: the primary only, what ORIGINAL_DST takes).
    fallbacks: int = 0
    log_level: str = "info"
    access_log: bool = True
    drain_s: float = 5.0
    uvloop: bool = True
    # The Kubernetes API server's URL, reached with no token (None: the pod's service account).
    kubernetes_api: str | None = None
    # Redis for shared state, in place of the config's ``state`` section (None: the config's).
    state_url: str | None = None


class Picker:
    """The ext_proc service: each stream is one request, run through the gateway's director."""

    def __init__(self, gateway: Gateway, fallbacks: int) -> None:
        self._gateway = gateway
        self._fallbacks = fallbacks

    async def process(self, call: Call) -> None:
        """One ext_proc stream (``ExternalProcessor/Process``); a failure ends it with an error
        status, and Envoy then answers as its failure_mode_allow says."""
        try:
            await PickerStream(self._gateway, call, self._fallbacks).run()
        except asyncio.CancelledError:
            log.debug("an ext_proc stream ended before its request did")
            raise


def ready(gateway: Gateway) -> bool:
    """Every model has a replica the monitor found healthy (the proxy's ``/ready``)."""
    snapshot = gateway.store.snapshot()
    return all(any(snapshot.get(r.id) is not None and snapshot[r.id].health is Health.UP for r in model.replicas)
               for model in gateway.current.config.models.values())


async def _watch_readiness(gateway: Gateway, health: HealthService) -> None:
    health_pb = health_pb2.HealthCheckResponse
    health.set("liveness", health_pb.SERVING)
    while True:
        status = health_pb.SERVING if ready(gateway) else health_pb.NOT_SERVING
        for service in ("readiness", EXT_PROC_SERVICE, ""):
            health.set(service, status)
        await asyncio.sleep(READINESS_POLL_S)


async def run_picker(config_path: str | Path, options: PickerOptions, on_ready: Callable[[int], None] | None = None) -> None:
    """Serves until SIGINT/SIGTERM, then stops taking streams, lets open ones finish for up to
    ``drain_s`` and stops the gateway's parts. Raises ConfigError before binding."""
    config = load_config(config_path)
    kubernetes = None if options.kubernetes_api is None else ApiSettings.at(options.kubernetes_api)
    gateway = Gateway(config, config_path=str(config_path), kubernetes=kubernetes, state_url=options.state_url)
    await gateway.start()
    health = HealthService()
    server = RpcServer({PROCESS_PATH: (Picker(gateway, options.fallbacks).process, ext_proc.ProcessingRequest)}, health)
    port = await server.start(options.host, options.port)
    if options.metrics_port is not None:
        start_http_server(options.metrics_port, addr=options.host, registry=gateway.telemetry.registry)
    # What start-up built lives as long as the process: frozen, the collector's full passes walk
    # only what requests made since, as the proxy's server does (gateway/api/server.py).
    gc.freeze()
    watcher = asyncio.create_task(_watch_readiness(gateway, health))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log.info("duet epp: ext_proc on %s:%d", options.host, port)
    if on_ready is not None:
        on_ready(port)
    try:
        await stop.wait()
    finally:
        health.shut_down()
        await server.stop(options.drain_s)
        watcher.cancel()
        await gateway.stop()


def serve_picker(config_path: str | Path, options: PickerOptions, on_ready: Callable[[int], None] | None = None) -> None:
    configure_logging(options.log_level, options.access_log)
    if options.uvloop:
        uvloop.install()  # as the proxy runs (uvicorn's loop="uvloop")
    asyncio.run(run_picker(config_path, options, on_ready))
