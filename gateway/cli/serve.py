"""duet serve: the gateway alone, in front of the replicas its config names."""

from __future__ import annotations

import argparse
import sys

from gateway.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("serve", help="run the gateway in front of configured replicas")
    parser.add_argument("--config", required=True, help="duet.yaml")
    parser.add_argument("--host", default=None, help="bind address (default: server.host)")
    parser.add_argument("--port", type=int, default=None, help="port (default: server.port)")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--no-access-log", action="store_true", help="skip the per-request log line")
    parser.add_argument("--state", default=None, metavar="redis://HOST:PORT/DB",
                        help="share state through this Redis (overrides state.store and state.redis_url)")
    parser.add_argument("--kubernetes-api", default=None, metavar="URL",
                        help="the Kubernetes API for inference_pool/discovery as given, with no token (kubectl proxy); "
                             "default: the pod's service account")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gateway.api.server import ServeOptions, serve
    from gateway.cli.online_parity import tools

    try:
        serve(args.config, ServeOptions(args.host, args.port, args.log_level, not args.no_access_log, args.state,
                                        parity=tools(), kubernetes_api=args.kubernetes_api))
    except ConfigError as exc:
        print(f"duet serve: invalid config: {exc}", file=sys.stderr)
        return 2
    return 0
