"""One parity run end to end: build the suite, find both endpoints' models, run, compute the
statistics, write the report, and (optionally) record the verdicts in a config."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from quantize.errors import ParityError
from quantize.evals.suite import build_suite, task_types
from quantize.parity.client import resolve_model
from quantize.parity.policy import PolicyChange, PolicyTarget, write_policy
from quantize.parity.report import RunInfo, build_report, write_report
from quantize.parity.run import RunSettings, run_suite
from quantize.parity.stats import task_stats


@dataclass(frozen=True, slots=True)
class ParityOptions:
    standard_url: str
    candidate_url: str
    standard_model: str | None = None
    candidate_model: str | None = None
    suite: str = "default"
    samples: int = 100
    tasks: tuple[str, ...] = ()
    tolerance: float = 0.05
    seed: int = 0
    out: Path = Path("runs/parity")
    settings: RunSettings = RunSettings()
    api_key: str | None = None
    policy: PolicyTarget | None = None  # --write-policy: where the verdicts are recorded
    command: str = "duet parity"
    hardware: dict[str, Any] | None = None  # where both endpoints run (report.measured_on), when known


@dataclass(frozen=True, slots=True)
class ParityOutcome:
    report: dict[str, Any]
    files: list[Path]
    policy: PolicyChange | None


def check_options(options: ParityOptions) -> None:
    """Refuse bad input before any request is sent."""
    if not 0 < options.tolerance < 1:
        raise ParityError(f"--tolerance must be in (0, 1), got {options.tolerance}")
    if options.policy is not None and not options.policy.path.is_file():
        raise ParityError(f"--write-policy {options.policy.path}: no such file")
    if options.settings.concurrency < 1 or options.settings.timeout_s <= 0:
        raise ParityError("--concurrency must be >= 1 and --timeout > 0")


async def run_parity(options: ParityOptions) -> ParityOutcome:
    check_options(options)
    types = task_types()
    suite = build_suite(options.suite, seed=options.seed, samples=options.samples, tasks=options.tasks or None,
                        types=types)
    headers = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    limits = httpx.Limits(max_connections=2 * options.settings.concurrency + 2)
    async with httpx.AsyncClient(headers=headers, limits=limits) as client:
        standard = await resolve_model(client, "standard", options.standard_url, options.standard_model)
        candidate = await resolve_model(client, "candidate", options.candidate_url, options.candidate_model)
        started = time.perf_counter()
        runs = await run_suite(suite, standard, candidate, types, options.settings, client)
    stats = [task_stats(run, tolerance=options.tolerance, seed=options.seed) for run in runs]
    info = RunInfo(standard, candidate, suite, options.tolerance, options.command, time.perf_counter() - started,
                   options.hardware)
    report = build_report(stats, info)
    files = write_report(report, runs, options.out)
    policy = None if options.policy is None else write_policy(options.policy, report)
    return ParityOutcome(report, files, policy)
