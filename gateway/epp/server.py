"""``duet epp``'s process: the gateway's parts (``gateway.runtime.Gateway``: config, replica
state and monitor, keys and quotas, telemetry, the director with its hooks) behind a gRPC server
that speaks ``envoy.service.ext_proc.v3.ExternalProcessor`` (one stream per HTTP request,
``gateway.epp.stream``) and the gRPC health service the protocol asks for: ``liveness``
(the process answers), ``readiness`` and the ext_proc service itself (every model has a
healthy replica, as the proxy's ``/ready`` says). Prometheus' ``duet_*`` metrics on
``--metrics-port`` when given."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import uvloop
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from prometheus_client import start_http_server

from gateway.config import load_config
from gateway.discovery.api import ApiSettings
from gateway.epp.stream import PickerStream
from gateway.epp.wire import Message
from gateway.flow import Health
from gateway.logs import configure_logging
from gateway.runtime import Gateway

log = logging.getLogger(__name__)

EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"
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


class _Context:
    """The ext_proc stream's channel over a gRPC call's context."""

    def __init__(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        self._context = context

    async def read(self) -> Message | None:
        message = await self._context.read()
        return None if message is grpc.aio.EOF else message

    async def write(self, response: Message) -> None:
        await self._context.write(response)


class Picker(ext_proc_grpc.ExternalProcessorServicer):  # type: ignore[misc]
    """The ext_proc service: each stream is one request, run through the gateway's director."""

    def __init__(self, gateway: Gateway, fallbacks: int) -> None:
        self._gateway = gateway
        self._fallbacks = fallbacks

    async def Process(self, requests: AsyncIterator[Message], context: grpc.aio.ServicerContext[Any, Any]) -> None:  # noqa: N802
        try:
            await PickerStream(self._gateway, _Context(context), self._fallbacks).run()
        except asyncio.CancelledError:
            log.debug("an ext_proc stream ended before its request did")
        except Exception:
            # gRPC ends the stream with an error; Envoy then answers as failure_mode_allow says.
            log.exception("the endpoint picker failed on a request")
            raise


def ready(gateway: Gateway) -> bool:
    """Every model has a replica the monitor found healthy (the proxy's ``/ready``)."""
    snapshot = gateway.store.snapshot()
    return all(any(snapshot.get(r.id) is not None and snapshot[r.id].health is Health.UP for r in model.replicas)
               for model in gateway.current.config.models.values())


async def _watch_readiness(gateway: Gateway, health: health_aio.HealthServicer) -> None:
    health_pb = health_pb2.HealthCheckResponse
    await health.set("liveness", health_pb.SERVING)
    while True:
        status = health_pb.SERVING if ready(gateway) else health_pb.NOT_SERVING
        for service in ("readiness", EXT_PROC_SERVICE, ""):
            await health.set(service, status)
        await asyncio.sleep(READINESS_POLL_S)


async def run_picker(config_path: str | Path, options: PickerOptions, on_ready: Callable[[int], None] | None = None) -> None:
    """Serves until SIGINT/SIGTERM, then stops taking streams, lets open ones finish for up to
    ``drain_s`` and stops the gateway's parts. Raises ConfigError before binding."""
    config = load_config(config_path)
    kubernetes = None if options.kubernetes_api is None else ApiSettings.at(options.kubernetes_api)
    gateway = Gateway(config, config_path=str(config_path), kubernetes=kubernetes, state_url=options.state_url)
    await gateway.start()
    server = grpc.aio.server()
    ext_proc_grpc.add_ExternalProcessorServicer_to_server(Picker(gateway, options.fallbacks), server)
    health = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    port = server.add_insecure_port(f"{options.host}:{options.port}")
    if options.metrics_port is not None:
        start_http_server(options.metrics_port, addr=options.host, registry=gateway.telemetry.registry)
    await server.start()
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
        await health.enter_graceful_shutdown()
        await server.stop(grace=options.drain_s)
        watcher.cancel()
        await gateway.stop()


def serve_picker(config_path: str | Path, options: PickerOptions, on_ready: Callable[[int], None] | None = None) -> None:
    configure_logging(options.log_level, options.access_log)
    if options.uvloop:
        uvloop.install()  # as the proxy runs (uvicorn's loop="uvloop")
    asyncio.run(run_picker(config_path, options, on_ready))
