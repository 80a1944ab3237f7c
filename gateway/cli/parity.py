"""duet parity: run the verifiable suite on a standard and a candidate endpoint, report per task
type whether the candidate keeps the standard's capability, and optionally record the verdicts
in a config (docs/parity.md)."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from gateway.config import load_config, parse_config
from gateway.errors import ConfigError
from quantize.errors import ParityError, SuiteError
from quantize.evals.suite import SUITES, TASK_NAMES
from quantize.parity.gate import ParityOptions, ParityOutcome, run_parity
from quantize.parity.policy import PolicyTarget, write_policy
from quantize.parity.report import read_report
from quantize.parity.run import RunSettings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "parity", help="capability parity of a candidate variant against the standard, per task type",
        description="Run the verifiable evaluation suite on two OpenAI-compatible endpoints and compare them; "
                    "`duet parity status --config FILE` prints the running gateway's online verdicts.")
    parser.add_argument("action", nargs="?", choices=("run", "status"), default="run",
                        help="run (default): an offline parity run; status: the live table of online parity")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="status: the gateway's duet.yaml (its online_parity.status_file is read)")
    parser.add_argument("--standard", metavar="URL", help="the standard variant's base URL")
    parser.add_argument("--candidate", metavar="URL", help="the candidate variant's base URL")
    parser.add_argument("--from-report", type=Path, default=None, metavar="PARITY_JSON",
                        help="no run: record an earlier report's verdicts (with --write-policy and --variant)")
    parser.add_argument("--model", default=None, help="model name on both endpoints (default: the only one served)")
    parser.add_argument("--standard-model", default=None)
    parser.add_argument("--candidate-model", default=None)
    parser.add_argument("--suite", default="default", help=f"one of: {', '.join(SUITES)}")
    parser.add_argument("--samples", type=int, default=100, help="items per task type (default 100)")
    parser.add_argument("--tasks", default=None, help=f"comma-separated subset of: {', '.join(TASK_NAMES)}")
    parser.add_argument("--tolerance", type=float, default=0.05,
                        help="allowed when the 95%% CI of (candidate - standard) has its lower bound >= -T and there "
                             "are >= 3/T samples (default 0.05: 60 samples)")
    parser.add_argument("--seed", type=int, default=0, help="suite and bootstrap seed")
    parser.add_argument("--out", type=Path, default=Path("runs/parity"), help="report directory")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight per endpoint")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per request")
    parser.add_argument("--api-key-env", default=None, metavar="VAR", help="environment variable holding a bearer key")
    parser.add_argument("--write-policy", type=Path, default=None, metavar="FILE",
                        help="record the verdicts as the variant's allowed_tasks in this duet.yaml")
    parser.add_argument("--variant", default=None, help="the variant (or model/variant) --write-policy updates")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "status":
        return status(args.config)
    try:
        if args.from_report is not None:
            outcome = _recorded(args)
        else:
            outcome = asyncio.run(run_parity(_options(args)))
    except (ParityError, SuiteError) as exc:
        print(f"duet parity: {exc}", file=sys.stderr)
        return 2
    _print(outcome)
    return 0


def _recorded(args: argparse.Namespace) -> ParityOutcome:
    """--from-report: the verdicts of a report already written, after checking its hash."""
    if args.standard or args.candidate:
        raise ParityError("--from-report records an earlier run: drop --standard and --candidate")
    if args.write_policy is None or args.variant is None:
        raise ParityError("--from-report needs --write-policy FILE and --variant NAME")
    report = read_report(args.from_report)
    target = PolicyTarget(args.write_policy, args.variant, config_problem)
    return ParityOutcome(report, [args.from_report], write_policy(target, report))


def _policy_target(args: argparse.Namespace) -> PolicyTarget | None:
    """Where --write-policy FILE --variant NAME records the verdicts; None without either."""
    if (args.write_policy is None) != (args.variant is None):
        raise ParityError("--write-policy and --variant go together")
    return None if args.write_policy is None else PolicyTarget(args.write_policy, args.variant, config_problem)


def config_problem(text: str, source: str) -> str | None:
    """What the gateway would say about a config's text (``source`` names the file), or None when
    it loads: the check quantize's policy writer runs before it replaces the file."""
    try:
        parse_config(text, source=source)
    except ConfigError as exc:
        return str(exc)
    return None


def _options(args: argparse.Namespace) -> ParityOptions:
    if not args.standard or not args.candidate:
        raise ParityError("--standard URL and --candidate URL are required (or --from-report)")
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip()) if args.tasks else ()
    if args.tasks is not None and not tasks:
        raise ParityError("--tasks is empty")
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ParityError(f"--api-key-env {args.api_key_env}: the variable is not set")
    return ParityOptions(
        standard_url=args.standard, candidate_url=args.candidate,
        standard_model=args.standard_model or args.model, candidate_model=args.candidate_model or args.model,
        suite=args.suite, samples=args.samples, tasks=tasks, tolerance=args.tolerance, seed=args.seed, out=args.out,
        settings=RunSettings(concurrency=args.concurrency, timeout_s=args.timeout, show_progress=not args.no_progress),
        api_key=api_key, policy=_policy_target(args),
        command="duet parity " + shlex.join(sys.argv[2:] if sys.argv[1:2] == ["parity"] else sys.argv[1:]))


def status(config: Path | None) -> int:
    """Print the online verdicts a gateway running on ``config`` last wrote."""
    if config is None:
        print("duet parity status: --config FILE is required", file=sys.stderr)
        return 2
    try:
        settings = load_config(config).online_parity
    except ConfigError as exc:
        print(f"duet parity status: invalid config: {exc}", file=sys.stderr)
        return 2
    if not settings.enabled or settings.status_file is None:
        print(f"duet parity status: {config} has no online_parity section", file=sys.stderr)
        return 2
    try:
        written = json.loads(Path(settings.status_file).read_text())
    except FileNotFoundError:
        print(f"no online verdicts yet ({settings.status_file} not written: no pair checked)")
        return 0
    except (OSError, json.JSONDecodeError) as exc:
        print(f"duet parity status: cannot read {settings.status_file}: {exc}", file=sys.stderr)
        return 2
    print(status_table(written))
    return 0


def status_table(written: dict[str, Any]) -> str:
    """The live table: one line per (variant, task). Evidence is log-wealth / log(1/alpha): a
    side reaching 1.00 has concluded (loss: revoke; parity: a shadow variant's task opens)."""
    when = datetime.datetime.fromtimestamp(written["written_at"], datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    header = f"{'variant':<22}{'task':<14}{'pairs':>6}{'loss':>8}{'tol':>6}{'conf':>6}{'ev.loss':>9}{'ev.parity':>10}"
    lines = [f"online parity, as of {when}", header + "  conclusion"]
    for row in written["table"]:
        lines.append(f"{row['variant']:<22}{row['task']:<14}{row['pairs']:>6}{row['mean_loss']:>8.3f}{row['tolerance']:>6.2f}"
                     f"{row['confidence']:>6.2f}{row['evidence_loss']:>9.2f}{row['evidence_parity']:>10.2f}  {row['conclusion']}")
    return "\n".join(lines)


def _print(outcome: ParityOutcome) -> None:
    print(f"{'task':<14}{'standard':>10}{'candidate':>11}{'diff':>8}   {'95% CI':<18}verdict")
    for task, t in outcome.report["tasks"].items():
        ci = f"[{t['ci95'][0]:+.3f}, {t['ci95'][1]:+.3f}]"
        print(f"{task:<14}{t['standard_acc']:>10.3f}{t['candidate_acc']:>11.3f}{t['diff']:>+8.3f}   {ci:<18}{t['verdict']}")
    print(f"report: {', '.join(str(p) for p in outcome.files)} (sha256 {outcome.report['report_sha256'][:16]})")
    if outcome.policy is not None:
        policy = outcome.policy
        print(f"policy: {policy.model}/{policy.variant} allowed_tasks = [{', '.join(policy.allowed)}]")
        if policy.skipped:
            print(f"policy: not in the config's routing.tasks, left out: {', '.join(policy.skipped)}")
        if policy.rewritten:
            print("policy: the variant is in flow style, so the file was rewritten (comments lost)")
