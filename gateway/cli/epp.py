"""duet epp: the endpoint picker of an Envoy-based gateway (GIE's protocol v1.0.0 over ext_proc)."""

from __future__ import annotations

import argparse
import sys

from gateway.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("epp", help="serve as the endpoint picker (Envoy ext_proc) of an inference gateway")
    parser.add_argument("--config", required=True, help="duet.yaml (its replicas are the pool)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address of the gRPC server")
    parser.add_argument("--port", type=int, default=9002, help="gRPC port: ext_proc and health (GIE's default 9002)")
    parser.add_argument("--metrics-port", type=int, default=None, help="serve duet_* Prometheus metrics here")
    parser.add_argument("--fallbacks", type=int, default=0,
                        help="endpoints after the primary in each pick, for a data plane that takes a list "
                             "(Envoy's override_host load balancer); 0 for an ORIGINAL_DST cluster")
    parser.add_argument("--kubernetes-api", default=None, metavar="URL",
                        help="the Kubernetes API for inference_pool/discovery as given, with no token (kubectl proxy); "
                             "default: the pod's service account")
    parser.add_argument("--state", default=None, metavar="redis://HOST:PORT/DB",
                        help="share state through this Redis (overrides state.store and state.redis_url)")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--no-access-log", action="store_true", help="skip the per-request log line")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gateway.epp.server import PickerOptions, serve_picker

    try:
        serve_picker(args.config, PickerOptions(args.host, args.port, args.metrics_port, args.fallbacks, args.log_level,
                                                   not args.no_access_log,
                                                   kubernetes_api=args.kubernetes_api, state_url=args.state))
    except ConfigError as exc:
        print(f"duet epp: invalid config: {exc}", file=sys.stderr)
        return 2
    return 0
