"""duet deploy render: Kubernetes or compose files for a config (see gateway/deploy/render.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gateway.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from gateway.deploy.plan import CHOICES
    from gateway.deploy.render import GATEWAY_IMAGE

    parser = subparsers.add_parser("deploy", help="render Kubernetes / compose deployments from a config")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    render = actions.add_parser("render", help="write a target's files for a duet.yaml")
    render.add_argument("--config", required=True, help="duet.yaml (every variant needs a launch_profile)")
    render.add_argument("--target", required=True, choices=CHOICES,
                        help="gie: Duet as the endpoint picker of a Gateway API Inference Extension gateway")
    render.add_argument("--out", required=True, type=Path, help="directory to write into")
    render.add_argument("--gateway-image", default=GATEWAY_IMAGE)
    render.add_argument("--redis-url", default=None, help="Kubernetes: use this Redis instead of deploying one")
    render.add_argument("--autoscaler", default=None, choices=("hpa", "keda"),
                        help="Kubernetes: scale every autoscaled model with this instead of its config's choice")
    render.add_argument("--gateway-name", default=None,
                        help="gie: the Gateway the HTTPRoute attaches to (default: inference-gateway)")
    render.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gateway.deploy.render import render, write

    try:
        files = render(args.config, args.target, gateway_image=args.gateway_image, redis_url=args.redis_url,
                       autoscaler=args.autoscaler, gateway_name=args.gateway_name)
    except (ConfigError, OSError) as exc:
        print(f"duet deploy render: {args.config}: {exc}", file=sys.stderr)
        return 2
    write(files, args.out)
    print(f"{args.target}: {len(files)} files in {args.out}")
    return 0
