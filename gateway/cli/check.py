"""duet check: validate a config file; errors name their path."""

from __future__ import annotations

import argparse
import sys

from gateway.config import load_config
from gateway.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("check", help="validate a duet.yaml")
    parser.add_argument("file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print(f"{args.file}: invalid\n{exc}", file=sys.stderr)
        return 1
    replicas = len(config.replicas)
    variants = sum(len(m.variants) for m in config.models.values())
    print(f"{args.file}: ok ({len(config.models)} model(s), {variants} variant(s), {replicas} replica(s), "
          f"{len(config.policy.profiles)} routing profile(s))")
    return 0
