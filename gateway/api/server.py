"""Running the gateway under uvicorn: one process, uvloop + httptools, graceful drain."""

from __future__ import annotations

import gc
import math
import signal
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from gateway.api.app import create_app
from gateway.api.http_limits import with_header_limit
from gateway.config import load_config
from gateway.discovery.api import ApiSettings
from gateway.logs import configure_logging
from gateway.parity.ports import ParityTools
from gateway.runtime import Gateway


class _Server(uvicorn.Server):
    """uvicorn's server, telling the caller once it listens (for `duet up`'s ready line)."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_ready = on_ready

    async def startup(self, sockets: Sequence[socket.socket] | None = None) -> None:
        await super().startup(sockets=list(sockets) if sockets is not None else None)
        # What start-up built (the app, the config, the task detector's tables, imported modules)
        # lives as long as the process: frozen, the collector's full passes walk only what requests
        # made since. Those passes cost ~15 us a request on a saturated core before (cpu_cost).
        gc.freeze()
        if self._on_ready is not None and self.started:
            self._on_ready()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM:
            # uvicorn raises a caught signal again once drained, so the process dies by SIGTERM
            # (status -15). A drained SIGTERM is an orderly stop (Kubernetes, systemd): exit 0.
            self._captured_signals.remove(sig)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What the command line overrides: where to listen (None: the config's ``server`` section),
    logging, and Redis for shared state (None: the config's ``state`` section)."""

    host: str | None = None
    port: int | None = None
    log_level: str = "info"
    access_log: bool = True
    state_url: str | None = None
    # Online parity's verifiers and policy writer (the command shell's; None: no shadow checks).
    parity: ParityTools | None = None
    # The Kubernetes API server's URL, reached with no token (None: the pod's service account).
    kubernetes_api: str | None = None


def serve(config_path: str | Path, options: ServeOptions = ServeOptions(),
          on_ready: Callable[[], None] | None = None) -> None:
    """Blocks until SIGINT/SIGTERM; then stops accepting, drains in-flight requests for up to
    ``server.drain_timeout_s`` and returns. Raises ConfigError before binding if the file is invalid."""
    config = load_config(config_path)
    configure_logging(options.log_level, options.access_log)
    kubernetes = None if options.kubernetes_api is None else ApiSettings.at(options.kubernetes_api)
    app = create_app(lambda: Gateway(config, config_path=str(config_path), state_url=options.state_url,
                                     parity=options.parity, kubernetes=kubernetes))
    server_config = uvicorn.Config(
        app,
        host=options.host or config.server.host,
        port=config.server.port if options.port is None else options.port,
        loop="uvloop",
        http=with_header_limit(config.server.max_header_bytes),
        lifespan="on",
        access_log=False,
        log_config=None,
        # Whole seconds (uvicorn's type); rounded up, as int() would turn 0.5 s into no drain at all.
        timeout_graceful_shutdown=math.ceil(config.server.drain_timeout_s),
        timeout_keep_alive=30,
    )
    _Server(server_config, on_ready).run()
