"""Running the gateway under uvicorn: one process, uvloop + httptools, graceful drain."""

from __future__ import annotations

from pathlib import Path

import uvicorn

from gateway.api.app import create_app
from gateway.config import load_config
from gateway.logs import configure_logging
from gateway.runtime import Gateway


def serve(config_path: str | Path, *, host: str | None = None, port: int | None = None,
          log_level: str = "info", access_log: bool = True) -> None:
    """Blocks until SIGINT/SIGTERM; then stops accepting, drains in-flight requests for up to
    ``server.drain_timeout_s`` and returns. Raises ConfigError before binding if the file is invalid."""
    config = load_config(config_path)
    configure_logging(log_level, access_log)
    app = create_app(lambda: Gateway(config, config_path=str(config_path)))
    uvicorn.run(
        app,
        host=host or config.server.host,
        port=config.server.port if port is None else port,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=int(config.server.drain_timeout_s),
        timeout_keep_alive=30,
    )
