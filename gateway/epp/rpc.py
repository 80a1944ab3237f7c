"""A gRPC server on ``h2.py``'s transport: each call's ``:path`` names its handler, which reads
and writes protobuf messages through a ``Call`` and whose return (or failure) is the call's
status in the trailers; and the gRPC health service (``grpc.health.v1.Health/Check``) over a
status per service name, as Kubernetes' gRPC probes and ``grpc_health_probe`` ask it.

    server = RpcServer({PROCESS_PATH: handler}, health)
    port = await server.start("127.0.0.1", 9002)
    ...
    await server.stop(grace_s)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from grpc_health.v1 import health_pb2

from gateway.epp.h2 import Connection, Stream, StreamReset

log = logging.getLogger(__name__)

OK, CANCELLED, UNKNOWN, NOT_FOUND, UNIMPLEMENTED, INTERNAL = 0, 1, 2, 5, 12, 13
HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check"
Message = Any  # a generated protobuf message


class RpcError(Exception):
    """Ends the call with ``status`` (a gRPC status code) and ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Call:
    """One call's messages: requests decoded as ``request_type``, responses serialised."""

    def __init__(self, stream: Stream, request_type: Any) -> None:
        self._stream = stream
        self._parse = request_type.FromString

    async def read(self) -> Message | None:
        """The next request; None once the client ended its side."""
        raw = await self._stream.read()
        if self._stream.compressed:
            raise RpcError(UNIMPLEMENTED, "compressed messages are not supported")
        return None if raw is None else self._parse(raw)

    async def write(self, response: Message) -> None:
        await self._stream.write(response.SerializeToString())

    def answered(self) -> None:
        """The client has every message it will get: the call ends OK now (its trailers leave
        with the last message), whatever the handler still does after."""
        self._stream.end_now()


Handler = Callable[[Call], Awaitable[None]]


class HealthService:
    """The gRPC health service's statuses by service name ("" is the server as a whole)."""

    def __init__(self) -> None:
        self._statuses: dict[str, int] = {}

    def set(self, service: str, status: int) -> None:
        self._statuses[service] = status

    def shut_down(self) -> None:
        """Every service NOT_SERVING (graceful shutdown: probes see the picker leave first)."""
        for service in self._statuses:
            self._statuses[service] = health_pb2.HealthCheckResponse.NOT_SERVING

    async def check(self, call: Call) -> None:
        request = await call.read()
        service = "" if request is None else request.service
        if service not in self._statuses:
            raise RpcError(NOT_FOUND, f"unknown service {service!r}")
        await call.write(health_pb2.HealthCheckResponse(status=self._statuses[service]))


class RpcServer:
    """Listens for h2c connections and runs one task per call; ``handlers``: by ``:path``, each
    with its request type."""

    def __init__(self, handlers: Mapping[str, tuple[Handler, Any]], health: HealthService | None = None) -> None:
        self._handlers = dict(handlers)
        if health is not None:
            self._handlers[HEALTH_CHECK_PATH] = (health.check, health_pb2.HealthCheckRequest)
        self._server: asyncio.Server | None = None
        self._connections: set[Connection] = set()
        self._calls: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        """Listens on ``host:port`` (0: any free port); returns the port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._connection, host, port, reuse_address=True)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self, grace_s: float) -> None:
        """No new connections or calls; open calls get up to ``grace_s`` to finish, then are cancelled."""
        if self._server is not None:
            self._server.close()
        for connection in self._connections:
            connection.goaway()
        if self._calls:
            await asyncio.wait(set(self._calls), timeout=grace_s)
        for task in set(self._calls):
            task.cancel()
        for connection in set(self._connections):
            connection.close()

    def _connection(self) -> Connection:
        connection = Connection(self._start_call, self._connections.discard)
        self._connections.add(connection)
        return connection

    def _start_call(self, stream: Stream) -> None:
        task = asyncio.get_running_loop().create_task(self._run(stream))
        stream.task = task
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _run(self, stream: Stream) -> None:
        path = stream.headers.get(":path", "")
        found = self._handlers.get(path)
        try:
            if found is None:
                raise RpcError(UNIMPLEMENTED, f"no method {path}")
            handler, request_type = found
            await handler(Call(stream, request_type))
            await stream.finish(OK)
        except StreamReset:
            pass
        except RpcError as error:
            await stream.finish(error.status, str(error))
        except asyncio.CancelledError:
            if not stream.reset:  # the server stops: the client learns the call ended unfinished
                await _finish_quietly(stream, CANCELLED, "the server is stopping")
            raise
        except Exception as error:  # noqa: BLE001 (logged; the client gets the status)
            # The data plane ends the request as its failure mode says (Envoy's failure_mode_allow).
            log.exception("the call %s failed", path)
            await _finish_quietly(stream, UNKNOWN, f"{type(error).__name__}: {error}")


async def _finish_quietly(stream: Stream, status: int, message: str) -> None:
    try:
        await stream.finish(status, message)
    except StreamReset:
        log.debug("stream %d reset before its status went out", stream.id)
