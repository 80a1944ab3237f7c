"""``duet sim`` / ``python -m serving.sim``: run one simulated vLLM replica on uvicorn."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from serving.sim.answers.script import ScriptError, load_script
from serving.sim.engine.kvtransfer import FAILURE_POLICIES, TransferFaults
from serving.sim.parallel import load_profile
from serving.sim.profile import ROLES, ProfileError, available_profiles
from serving.sim.server.app import SimApp
from serving.sim.server.asgi import SimulatedCrash
from serving.sim.server.faults import FaultError, Faults, parse_kinds


def register(subparsers: Any) -> None:
    """Add the ``sim`` subcommand to the ``duet`` parser."""
    parser = subparsers.add_parser("sim", help="run one simulated vLLM replica",
                                   description="Run one simulated vLLM replica (see serving/sim/__init__.py).")
    add_arguments(parser)
    parser.set_defaults(run=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--profile", default="cpu-smollm2-bf16",
                        help=f"a shipped profile ({', '.join(available_profiles())}) or a YAML path")
    parser.add_argument("--served-model-name", default=None, help="model name to answer to (default: the profile's)")
    parser.add_argument("--time-scale", type=float, default=1.0, help="run the model this many times faster than real")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scheduling-policy", choices=("fcfs", "priority"), default="fcfs",
                        help="as vLLM's: priority orders the waiting queue by the requests' priority field")
    roles = parser.add_argument_group("engine role (vLLM's flags; unset: the profile's)")
    roles.add_argument("--role", choices=ROLES, default=None,
                       help="both (default), prefill (hands KV off, never decodes), decode (only from transferred KV)")
    roles.add_argument("--max-num-batched-tokens", type=int, default=None, help="the chunk budget of one step")
    roles.add_argument("--max-num-seqs", type=int, default=None, help="the largest batch")
    roles.add_argument("--kv-load-failure-policy", choices=FAILURE_POLICIES, default="fail",
                       help="what a decode engine does when transferred KV fails to arrive (vLLM's default: fail)")
    parser.add_argument("--answers", default=None, metavar="FILE",
                        help="scripted answers: rules matching the last user message (see serving/sim/answers/script.py)")
    faults = parser.add_argument_group("failure injection (also at run time: POST /sim/faults)")
    faults.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered with an error")
    faults.add_argument("--error-kinds", default="500", help="statuses to pick from, e.g. 429,500,503")
    faults.add_argument("--die-after-tokens", type=int, default=None, help="cut every response after N tokens")
    faults.add_argument("--hang", action="store_true", help="never answer (nor /health)")
    faults.add_argument("--slowdown", type=float, default=1.0, help="make every engine step X times slower")
    faults.add_argument("--kv-transfer-error-rate", type=float, default=0.0,
                        help="share of incoming KV transfers that fail (then --kv-load-failure-policy)")
    parser.add_argument("--log-level", default="warning")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; returns the exit status."""
    import uvicorn

    try:
        profile = load_profile(args.profile).with_engine(args.role, args.max_num_batched_tokens, args.max_num_seqs)
        transfer_faults = TransferFaults(args.kv_transfer_error_rate, args.kv_load_failure_policy, args.seed)
        faults = Faults(error_rate=args.error_rate, error_kinds=parse_kinds(args.error_kinds),
                        die_after_tokens=args.die_after_tokens, hang=args.hang, slowdown=args.slowdown)
        script = load_script(args.answers) if args.answers else None
    except (ProfileError, FaultError, ScriptError) as exc:
        print(f"duet sim: {exc}", file=sys.stderr)
        return 2
    app = SimApp(profile, served_name=args.served_model_name, time_scale=args.time_scale, seed=args.seed, faults=faults,
                 script=script, scheduling=args.scheduling_policy, transfer_faults=transfer_faults)
    logging.getLogger("uvicorn.error").addFilter(_HideSimulatedCrashes())
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                loop="uvloop", http="httptools", lifespan="on", timeout_keep_alive=30)
    return 0


class _HideSimulatedCrashes(logging.Filter):
    """Simulated crashes are intended: keep their tracebacks out of the server log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], SimulatedCrash))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving.sim", description="Run one simulated vLLM replica.")
    add_arguments(parser)
    return run(parser.parse_args(argv))
