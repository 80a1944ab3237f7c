"""The ``duet`` command. Each subcommand lives in its own module exposing ``register(subparsers)``;
``command`` imports only the module of the command being run, so ``duet sim`` never loads the
gateway and ``duet check`` never loads uvicorn, and its imports are plain ones the layering test
reads. The fleet's commands (replay, plan, plan-day) keep their arguments apart from what they
run (``*_args.py``): their ``register`` sets no ``run``, ``runner`` imports the command once its
arguments parsed, so their ``--help`` loads no simulator, replica set or lifecycle."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

# subcommand -> its one-line help, shown without importing its module
SUBCOMMANDS: dict[str, str] = {
    "up": "start local replicas and the gateway in front of them",
    "demo": "send a few requests through a running gateway: where each went, why, what it cost",
    "serve": "run the gateway in front of configured replicas",
    "epp": "serve as the endpoint picker (Envoy ext_proc) of an inference gateway",
    "check": "validate a duet.yaml",
    "calibrate": "measure a replica's speed and write a variant's speed block",
    "explain": "show how a config routes a request (dry run)",
    "detect": "evaluate or retrain the task detector on labelled requests",
    "sim": "run one simulated vLLM replica",
    "replay": "replay a trace through routing policies in virtual time",
    "plan": "the cheapest replica count per variant meeting a target (replayed)",
    "plan-day": "a day replayed: the peak's fixed fleet against the autoscaled one",
    "keys": "create, list and revoke API keys",
    "usage": "usage and cost per key, model, variant and task",
    "bench": "load tests and benchmarks",
    "deploy": "render Kubernetes / compose deployments from a config",
    "parity": "capability parity of a candidate variant against the standard, per task",
    "quantize": "build a quantized checkpoint (llmcompressor) from a recipe",
}


def command(name: str) -> ModuleType:
    """The module that registers subcommand ``name``, imported here and only now."""
    match name:
        case "up":
            from gateway.cli.local import up
            return up
        case "demo":
            from gateway.cli.local import demo
            return demo
        case "serve":
            from gateway.cli import serve
            return serve
        case "epp":
            from gateway.cli import epp
            return epp
        case "check":
            from gateway.cli import check
            return check
        case "calibrate":
            from gateway.cli import calibrate
            return calibrate
        case "explain":
            from gateway.cli import explain
            return explain
        case "detect":
            from gateway.cli import detect
            return detect
        case "sim":
            from serving.sim.server import cli as sim
            return sim
        case "replay":
            from gateway.fleet.commands import replay_args
            return replay_args
        case "plan":
            from gateway.fleet.commands import plan_args
            return plan_args
        case "plan-day":
            from gateway.fleet.commands import plan_day_args
            return plan_day_args
        case "keys":
            from gateway.cli import keys
            return keys
        case "usage":
            from gateway.cli import usage
            return usage
        case "bench":
            from loadtests.benchmarks import cli as bench
            return bench
        case "deploy":
            from gateway.cli import deploy
            return deploy
        case "parity":
            from gateway.cli import parity
            return parity
        case "quantize":
            from gateway.cli import quantize
            return quantize
    raise KeyError(name)


def runner(name: str) -> Callable[[argparse.Namespace], int]:
    """What runs subcommand ``name`` when its ``register`` set none (the fleet's commands),
    imported here and only now."""
    match name:
        case "replay":
            from gateway.fleet.commands import replay
            return replay.run
        case "plan":
            from gateway.fleet.commands import plan
            return plan.run
        case "plan-day":
            from gateway.fleet.commands import plan_day
            return plan_day.run
    raise KeyError(name)


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="duet", description="Duet: one model, two variants, one gateway.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = argv[0] if argv else None
    for name, help_text in SUBCOMMANDS.items():
        if name == wanted:
            command(name).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    run = getattr(args, "run", None) or runner(args.command)
    result = run(args)
    return int(result or 0)


if __name__ == "__main__":
    raise SystemExit(main())
