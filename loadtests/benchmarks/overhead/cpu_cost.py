"""``python -m loadtests.benchmarks.overhead.cpu_cost``: Duet's CPU time per request, the number that decides
its throughput once it saturates its core, measured so that other work on the machine barely
moves it.

Why CPU time and not req/s: ``make bench-overhead`` needs a quiet machine (it measures wall-clock
throughput), while this compares a change before and after on a shared one. The gateway runs
under ``duet serve`` (uvicorn, uvloop, httptools, as in production) in front of the same nginx
backend as the benchmark; wrk drives it with many connections for a while; the gateway's user +
system CPU seconds divided by the requests answered is its cost per request. Other processes
slow the run down but do not add to the gateway's own CPU time (cache effects aside), so a few
microseconds of difference are visible even under load.

``--profile DIR`` also records the gateway with py-spy during the measured phase and writes the
hottest functions (self and total time) to DIR.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadtests.benchmarks.overhead.measure.phases import MODES, run_wrk
from loadtests.benchmarks.overhead.measure.run import start_backend
from loadtests.benchmarks.overhead.measure.smoke import smoke_problem
from loadtests.benchmarks.overhead.measure.wrk import render_script
from loadtests.benchmarks.overhead.stack.canned import API_KEY, request_body
from loadtests.benchmarks.overhead.stack.duet import CONFIGS, duet_launch
from loadtests.benchmarks.overhead.stack.launch import GatewayLaunch, Unavailable
from loadtests.benchmarks.overhead.stack.processes import PinnedProcess, start_pinned, tree_cpu_seconds, wait_until
from serving.ports import free_port


@dataclass(frozen=True, slots=True)
class CpuCost:
    """One mode: requests answered, the gateway's CPU seconds, and what one request cost."""

    mode: str
    requests: int
    errors: int
    cpu_s: float
    wall_rps: float

    @property
    def us_per_request(self) -> float:
        return self.cpu_s / self.requests * 1e6 if self.requests else float("nan")

    @property
    def ceiling_rps(self) -> float:
        """Requests per second one fully busy core could answer at this cost."""
        return 1e6 / self.us_per_request if self.requests else 0.0


def measure_mode(
    base_url: str, script: Path, pid: int, seconds: float, connections: int, load_core: int
) -> tuple[int, int, float, float]:
    """Requests, errors, the gateway's CPU seconds and wall req/s of one measured phase."""
    url = f"{base_url}/v1/chat/completions"
    run_wrk(url, script, min(8, connections), 2.0, load_core)  # warm-up: pools, caches, first-use imports
    before = tree_cpu_seconds(pid)
    result = run_wrk(url, script, connections, seconds, load_core)
    return result.requests, result.errors, tree_cpu_seconds(pid) - before, result.rps


def top_functions(raw_stacks: Path, limit: int = 30) -> str:
    """The hottest functions of a py-spy ``--format raw`` file (collapsed stacks), by self and total samples."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in raw_stacks.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        samples += count
        # "name (file.py:line)" -> "name (file.py)": one row per function, not per line.
        frames = [frame.rsplit(":", 1)[0] + ")" if frame.endswith(")") else frame for frame in stack.split(";")]
        own[frames[-1]] += count
        for frame in set(frames):
            total[frame] += count
    lines = [f"{samples} samples", "", "self %  function"]
    lines += [f"{100 * n / samples:6.1f}  {name}" for name, n in own.most_common(limit)]
    lines += ["", "total %  function"]
    lines += [f"{100 * n / samples:6.1f}  {name}" for name, n in total.most_common(limit)]
    return "\n".join(lines) + "\n"


def _profile_command(pid: int, seconds: float, out: Path) -> list[str]:
    py_spy = Path(sys.executable).parent / "py-spy"
    return [str(py_spy), "record", "--pid", str(pid), "--duration", str(max(1, round(seconds))),
            "--rate", "500", "--format", "raw", "--output", str(out), "--nonblocking"]


def start_duet(run_dir: Path, backend_url: str, gateway_core: int, config: str = "bench",
               name: str = "duet") -> tuple[GatewayLaunch, PinnedProcess]:
    """``duet serve`` with ``config`` in front of the backend, pinned to ``gateway_core``, once it
    answers a request and a stream correctly (the caller stops it)."""
    launch = duet_launch(run_dir, backend_url, free_port(), name=name, config=config)
    if isinstance(launch, Unavailable):
        raise SystemExit(f"duet unavailable: {launch.reason}")
    process = start_pinned(name, launch.command, gateway_core, run_dir / f"{name}.log", launch.env)
    try:
        for stream in (False, True):
            wait_until(process, lambda s=stream: smoke_problem(launch.base_url, s) is None, 60)  # type: ignore[misc]
    except BaseException:
        process.stop()
        raise
    return launch, process


def run(run_dir: Path, modes: Sequence[str], seconds: float, connections: int, gateway_core: int,
        load_core: int, profile_dir: Path | None, config: str = "bench") -> list[CpuCost]:
    backend, backend_url = start_backend(run_dir, load_core)
    costs = []
    try:
        launch, process = start_duet(run_dir, backend_url, gateway_core, config)
        try:
            for mode in modes:
                script = run_dir / f"wrk-{mode}.lua"
                script.write_text(render_script(request_body(mode == "stream"), API_KEY))
                spy = None
                if profile_dir is not None:
                    profile_dir.mkdir(parents=True, exist_ok=True)
                    spy = subprocess.Popen(_profile_command(process.pid, seconds, profile_dir / f"{mode}.raw"),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                requests, errors, cpu_s, rps = measure_mode(launch.base_url, script, process.pid, seconds,
                                                            connections, load_core)
                if spy is not None:
                    spy.wait(60)
                    raw = profile_dir / f"{mode}.raw"  # type: ignore[operator]
                    if raw.exists():
                        (profile_dir / f"{mode}.top.txt").write_text(top_functions(raw))  # type: ignore[operator]
                costs.append(CpuCost(mode, requests, errors, cpu_s, rps))
        finally:
            process.stop()
    finally:
        backend.stop()
    return costs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.benchmarks.overhead.cpu_cost", description=__doc__)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, from non-stream,stream")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured phase per mode")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--gateway-core", type=int, default=1)
    parser.add_argument("--load-core", type=int, default=0)
    parser.add_argument("--profile", type=Path, default=None, help="record with py-spy; write DIR/<mode>.top.txt")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="bench",
                        help="bench: one replica, keys off; production: keys on with every limit, 2 variants x 2 replicas")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {unknown}; known: {list(MODES)}")
    with tempfile.TemporaryDirectory(prefix="duet-cpu-cost-") as tmp:
        Path(tmp).chmod(0o755)  # nginx's worker (user nobody when started as root) reads its Lua files here
        costs = run(Path(tmp), modes, args.seconds, args.connections, args.gateway_core, args.load_core, args.profile,
                    args.config)
    for cost in costs:
        print(f"{cost.mode:>10}: {cost.us_per_request:7.1f} us CPU/request  (ceiling {cost.ceiling_rps:6.0f} req/s on one core; "
              f"{cost.requests} requests, {cost.errors} errors, {cost.wall_rps:.0f} req/s wall)")
    for cost in costs:
        print(json.dumps({"mode": cost.mode, "us_per_request": round(cost.us_per_request, 1),
                          "requests": cost.requests, "errors": cost.errors}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
