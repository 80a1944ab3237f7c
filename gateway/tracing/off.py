"""Tracing off: the null object the gateway holds unless ``server.otlp_traces_endpoint`` is set
(``gateway.tracing.otlp`` is the real one). It subscribes to no hook and adds no header, so a
request pays one call that returns ``b""``; nothing here imports OpenTelemetry."""

from __future__ import annotations

from typing import Protocol

from gateway.flow.exchange import Exchange
from gateway.flow.hooks import Hooks


class Tracing(Protocol):
    def upstream_headers(self, exchange: Exchange) -> bytes:
        """Raw header lines (CRLF-terminated) carrying the request's trace context upstream."""

    def subscribe(self, hooks: Hooks) -> None: ...

    def shutdown(self) -> None: ...


class NoTracing:
    def upstream_headers(self, exchange: Exchange) -> bytes:
        return b""

    def subscribe(self, hooks: Hooks) -> None:
        pass

    def shutdown(self) -> None:
        pass


NO_TRACING = NoTracing()
