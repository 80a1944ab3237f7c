"""An aiohttp application served on a free loopback port, for tests that stand in for a server
Duet talks to (a replica's /health and /metrics, the Kubernetes API): one way to start it, so
every such stand-in binds 127.0.0.1 and the test that starts it stops it."""

from __future__ import annotations

import socket

from aiohttp import web


async def serve(app: web.Application, *, shutdown_timeout: float = 60.0) -> tuple[web.AppRunner, int]:
    """The running app's runner (``await runner.cleanup()`` stops it) and its port. The socket is
    bound before the site starts, so the port is the app's from the first request on."""
    runner = web.AppRunner(app, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    return runner, sock.getsockname()[1]
