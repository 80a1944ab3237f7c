"""One benchmark run: start the backend on the load core, measure its ceiling and the direct
connection, then start each gateway pinned to the gateway core, measure both modes, stop it.
"""

from __future__ import annotations

import functools
import platform
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from loadtests.benchmarks.overhead.measure.machine import wait_until_quiet
from loadtests.benchmarks.overhead.measure.modes import ALL_MODES, Mode, modes_for
from loadtests.benchmarks.overhead.measure.phases import Measurement, PhasePlan, measure, run_wrk
from loadtests.benchmarks.overhead.measure.smoke import mode_body, smoke_problem
from loadtests.benchmarks.overhead.measure.wrk import WrkResult, render_script
from loadtests.benchmarks.overhead.stack.backend import nginx_command, write_backend_files
from loadtests.benchmarks.overhead.stack.canned import API_KEY, canned_responses
from loadtests.benchmarks.overhead.stack.duet import duet_launch
from loadtests.benchmarks.overhead.stack.envoy import envoy_epp_launch, envoy_launch, envoy_null_picker_launch
from loadtests.benchmarks.overhead.stack.launch import GatewayLaunch, Unavailable
from loadtests.benchmarks.overhead.stack.peers import litellm_launch, vllm_router_launch
from loadtests.benchmarks.overhead.stack.processes import PinnedProcess, ProcessFailed, start_pinned, wait_until
from loadtests.benchmarks.overhead.stack.redis import start_redis
from serving.ports import free_port

# duet-redis: Duet with its state in Redis (`duet serve --state redis://...`, issue #5), the
# redis-server pinned to the load core beside the backend. duet-production: keys on with every
# limit set, two variants with two replicas each, the reference config's rules (issue #19);
# duet-production-keys-off: the same config without keys, what issue #19 compares it with.
# duet-detector-off: duet's config with the task detector off, what issue #28 compares duet with.
# envoy: Envoy alone over a static cluster; envoy-null-picker: Envoy with a picker that only
# answers ext_proc (-request-only: shown the request, not the response); envoy-duet-epp: Envoy with
# Duet as its endpoint picker (issue #35). A picker runs on the gateway core beside its Envoy.
GATEWAYS = ("duet", "duet-detector-off", "duet-production", "duet-production-keys-off", "duet-redis", "vllm-router",
            "litellm", "envoy", "envoy-null-picker", "envoy-null-picker-request-only", "envoy-duet-epp")
OPTIONAL_GATEWAYS: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything a run needs to know besides the phase plan."""

    run_dir: Path
    gateways: tuple[str, ...]
    litellm_venv: Path
    vllm_router_venv: Path
    gateway_core: int = 1
    plan: PhasePlan = field(default_factory=PhasePlan)
    # Wait up to this long for every core to be under 15% busy before starting (0: don't wait).
    wait_quiet_s: float = 0.0


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run measured, what it could not, and the facts the report quotes."""

    measurements: tuple[Measurement, ...]
    skipped: tuple[Unavailable, ...]
    backend_ceiling: dict[str, WrkResult]
    versions: dict[str, str]
    # Per core, how busy the machine was before the run started (other work skews numbers).
    busy_before: dict[str, float]


def _scripts(run_dir: Path) -> dict[str, Path]:
    scripts = {}
    for mode in ALL_MODES:
        path = run_dir / f"wrk-{mode.name}.lua"
        path.write_text(render_script(mode_body(mode), API_KEY))
        scripts[mode.name] = path
    return scripts


def _tool_version(command: Sequence[str]) -> str:
    """The first version number a tool prints for ``command`` (``nginx -v`` -> ``1.22.1``)."""
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=30, check=False)
    found = re.search(r"\d+\.\d+[\w.+-]*", done.stdout + done.stderr)
    return found.group(0) if found else "unknown"


def start_backend(run_dir: Path, core: int) -> tuple[PinnedProcess, str]:
    """Start nginx on ``core``; return it and its base URL once it answers a stream correctly."""
    port = free_port()
    conf = write_backend_files(run_dir / "backend", port, canned_responses())
    backend = start_pinned("backend (nginx)", nginx_command(conf), core, run_dir / "backend.log")
    url = f"http://127.0.0.1:{port}"
    wait_until(backend, lambda: smoke_problem(url, stream=True) is None, timeout_s=60)
    for mode in ALL_MODES:
        if (problem := smoke_problem(url, mode.stream, mode)) is not None:
            backend.stop()
            raise ProcessFailed(f"the backend answers {mode.name} wrongly: {problem}")
    return backend, url


def backend_ceiling(url: str, scripts: dict[str, Path], settings: RunSettings) -> dict[str, WrkResult]:
    """The backend alone on the load core, driven by wrk from the gateway core."""
    plan = settings.plan
    return {mode.name: run_wrk(f"{url}{mode.path}", scripts[mode.name], plan.connections,
                               max(3.0, plan.throughput_s / 2), settings.gateway_core) for mode in ALL_MODES}


def _duet_redis(settings: RunSettings, backend_url: str, cleanup: ExitStack) -> GatewayLaunch | Unavailable:
    """Duet with the Redis store; its redis-server runs on the load core until the run ends."""
    started = start_redis(settings.run_dir, settings.plan.load_core)
    if isinstance(started, Unavailable):
        return started
    redis, url = started
    cleanup.callback(redis.stop)
    return duet_launch(settings.run_dir, backend_url, free_port(), name="duet-redis", state_url=url)


def _launchers(
    settings: RunSettings, backend_url: str, cleanup: ExitStack
) -> dict[str, Callable[[], GatewayLaunch | Unavailable]]:
    run_dir = settings.run_dir
    return {
        "duet": lambda: duet_launch(run_dir, backend_url, free_port()),
        "duet-detector-off": lambda: duet_launch(run_dir, backend_url, free_port(), name="duet-detector-off",
                                                 config="bench-detector-off"),
        "duet-production": lambda: duet_launch(run_dir, backend_url, free_port(), name="duet-production", config="production"),
        "duet-production-keys-off": lambda: duet_launch(run_dir, backend_url, free_port(), name="duet-production-keys-off",
                                                        config="production-keys-off"),
        "duet-redis": lambda: _duet_redis(settings, backend_url, cleanup),
        "litellm": lambda: litellm_launch(settings.litellm_venv, run_dir, backend_url, free_port()),
        "vllm-router": lambda: vllm_router_launch(settings.vllm_router_venv, backend_url, free_port(), free_port()),
        "envoy": lambda: envoy_launch(run_dir, backend_url, free_port()),
        "envoy-null-picker": lambda: envoy_null_picker_launch(run_dir, backend_url, free_port()),
        "envoy-null-picker-request-only": lambda: envoy_null_picker_launch(run_dir, backend_url, free_port(),
                                                                           response=False),
        "envoy-duet-epp": lambda: envoy_epp_launch(run_dir, backend_url, free_port()),
    }


def measure_gateway(
    launch: GatewayLaunch, scripts: dict[str, Path], settings: RunSettings
) -> tuple[list[Measurement], list[Unavailable]]:
    """Start ``launch`` pinned to the gateway core, wait until it answers chat right, measure
    each of its modes, and stop it. A Responses mode it answers wrongly once chat works is
    reported unavailable (with the wrong answer) instead of measured."""
    log = settings.run_dir / f"{launch.name}.log"
    companions = [start_pinned(f"{launch.name} companion {i}", command, settings.gateway_core,
                               settings.run_dir / f"{launch.name}.companion-{i}.log", launch.env)
                  for i, command in enumerate(launch.companions)]
    process = start_pinned(launch.name, launch.command, settings.gateway_core, log, launch.env)
    measured: list[Measurement] = []
    skipped: list[Unavailable] = []
    try:
        def answers(stream: bool) -> bool:
            for companion in companions:
                companion.check_alive()  # a picker that died fails the gateway now, with its log
            return smoke_problem(launch.base_url, stream) is None

        for stream in (False, True):
            wait_until(process, functools.partial(answers, stream), launch.startup_timeout_s)
        for mode in modes_for(launch.name):
            if (problem := _settled_problem(process, launch.base_url, mode)) is not None:
                skipped.append(Unavailable(f"{launch.name} {mode.name}", f"answers {mode.path} wrongly: {problem}"))
                continue
            pids = (process.pid, *(companion.pid for companion in companions))  # a picker's CPU is the gateway's too
            measured.append(measure(launch.name, launch.base_url, mode, scripts[mode.name], settings.plan, pids))
        return measured, skipped
    finally:
        process.stop()
        for companion in companions:
            companion.stop()


# How long a gateway gets to answer a mode right before it is measured: a throughput phase that
# saturates the load core can delay the backend's /health past a gateway's probe timeout, and the
# gateway then holds the replica down until its next probe passes (seen here on a busy machine).
MODE_READY_S = 20.0


def _settled_problem(process: PinnedProcess, base_url: str, mode: Mode) -> str | None:
    """``None`` once the gateway answers ``mode`` right, else what was still wrong after
    ``MODE_READY_S`` (``ProcessFailed`` if the gateway died meanwhile)."""
    deadline = time.monotonic() + MODE_READY_S
    while (problem := smoke_problem(base_url, mode.stream, mode)) is not None and time.monotonic() < deadline:
        process.check_alive()
        time.sleep(0.5)  # the gateway's health loop probes on its own interval
    return problem


def run(settings: RunSettings, say: Callable[[str], None] = print) -> RunResult:
    """The whole benchmark: backend ceiling, direct, then each gateway in turn."""
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    busy_before = wait_until_quiet(0.15, settings.wait_quiet_s, say)
    scripts = _scripts(settings.run_dir)
    backend, backend_url = start_backend(settings.run_dir, settings.plan.load_core)
    measurements: list[Measurement] = []
    skipped: list[Unavailable] = []
    versions = {"nginx": _tool_version(["nginx", "-v"]), "wrk": _tool_version(["wrk", "-v"]),
                "python": platform.python_version()}
    cleanup = ExitStack()
    try:
        say("backend ceiling (nginx alone on the load core, wrk on the gateway core)")
        ceiling = backend_ceiling(backend_url, scripts, settings)
        for mode in modes_for("direct"):
            say(f"  direct {mode.name}")
            measurements.append(measure("direct", backend_url, mode, scripts[mode.name], settings.plan, ()))
        launchers = _launchers(settings, backend_url, cleanup)
        for name in settings.gateways:
            launch = launchers[name]()
            if isinstance(launch, Unavailable):
                skipped.append(launch)
                say(f"  {name}: skipped ({launch.reason})")
                continue
            versions[name] = launch.version
            say(f"  {name} {launch.version}: starting, then measuring {', '.join(m.name for m in modes_for(name))}")
            try:
                measured, unavailable = measure_gateway(launch, scripts, settings)
                measurements += measured
                skipped += unavailable
                for missing in unavailable:
                    say(f"  {missing.name}: skipped ({missing.reason})")
            except ProcessFailed as failure:
                skipped.append(Unavailable(name, f"failed: {failure}"))
                say(f"  {name}: FAILED: {failure}")
    finally:
        cleanup.close()
        backend.stop()
    return RunResult(tuple(measurements), tuple(skipped), ceiling, versions, busy_before)
