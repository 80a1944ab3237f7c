"""Tracing is off unless configured: the gateway then holds the null object, which subscribes
to no hook and sends no header (so chat pays nothing for it)."""

from __future__ import annotations

import dataclasses

from gateway.config.load import load_config
from gateway.flow.hooks import Hooks
from gateway.runtime import build_tracing
from gateway.tracing.off import NO_TRACING
from tests.integration.cluster import DEMO


def test_off_by_default_and_the_null_object_does_nothing():
    config = load_config(DEMO)
    assert config.server.otlp_traces_endpoint is None
    assert build_tracing(config) is NO_TRACING
    hooks = Hooks()
    NO_TRACING.subscribe(hooks)
    assert hooks == Hooks()
    assert NO_TRACING.upstream_headers(None) == b""  # type: ignore[arg-type]


def test_on_by_config_it_subscribes_to_every_event():
    config = load_config(DEMO)
    server = dataclasses.replace(config.server, otlp_traces_endpoint="http://127.0.0.1:1/v1/traces")
    tracing = build_tracing(dataclasses.replace(config, server=server))
    hooks = Hooks()
    tracing.subscribe(hooks)
    assert all(len(getattr(hooks, event)) == 1 for event in ("dispatched", "first_token", "attempt_ended", "done", "refused"))
    tracing.shutdown()
