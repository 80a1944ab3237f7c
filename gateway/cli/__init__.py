"""The ``duet`` command. Each subcommand lives in its own module exposing
``register(subparsers)``; modules are imported lazily so ``duet sim`` never loads the gateway
and ``duet check`` never loads uvicorn."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# subcommand -> module that registers it (and its one-line help, shown without importing it)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "up": ("gateway.cli.up", "start local replicas and the gateway in front of them"),
    "serve": ("gateway.cli.serve", "run the gateway in front of configured replicas"),
    "check": ("gateway.cli.check", "validate a duet.yaml"),
    "calibrate": ("gateway.cli.calibrate", "measure a replica's speed and write a variant's speed block"),
    "explain": ("gateway.cli.explain", "show how a config routes a request (dry run)"),
    "detect": ("gateway.cli.detect", "evaluate or retrain the task detector on labelled requests"),
    "sim": ("serving.sim.cli", "run one simulated vLLM replica"),
    "replay": ("loadtests.replay.cli", "replay a trace through routing policies in virtual time"),
    "plan": ("loadtests.capacity.cli", "the cheapest replica count per variant meeting a target (replayed)"),
    "plan-day": ("loadtests.capacity.day_cli", "a day replayed: the peak's fixed fleet against the autoscaled one"),
    "keys": ("gateway.cli.keys", "create, list and revoke API keys"),
    "usage": ("gateway.cli.usage", "usage and cost per key, model, variant and task"),
    "bench": ("loadtests.benchmarks.cli", "load tests and benchmarks"),
    "deploy": ("gateway.cli.deploy", "render Kubernetes / compose deployments from a config"),
    "parity": ("gateway.cli.parity", "capability parity of a candidate variant against the standard, per task"),
    "quantize": ("gateway.cli.quantize", "build a quantized checkpoint (llmcompressor) from a recipe"),
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="duet", description="Duet: one model, two variants, one gateway.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = argv[0] if argv else None
    for name, (module, help_text) in SUBCOMMANDS.items():
        if name == wanted:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    result = args.run(args)
    return int(result or 0)


if __name__ == "__main__":
    raise SystemExit(main())
