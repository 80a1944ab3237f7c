"""Replicas never outlive their parent: a parent process starts a child the way Duet starts its
replicas (the vLLM launcher's ``start_process``, the supervisor, first start and a restart by its
watcher thread, ``SimProcess``), is SIGKILLed, and the child must be gone within a bound. A child
started without ``die_with_parent`` survives the same kill: the check can fail. Waits are on
conditions (the child's /proc state, the parent's report), never on elapsed time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

GONE_WITHIN_S = 10.0
REPORT_WITHIN_S = 60.0  # the parent starts a simulated replica and reports its pid

PRELUDE = """
import json, os, signal, subprocess, sys, threading
from pathlib import Path
from serving.die_with_parent import die_with_parent
from serving.ports import free_port
tmp = Path(sys.argv[1])
def report(pid):
    print(json.dumps({"child": pid}), flush=True)
    threading.Event().wait()  # until killed
SLEEPER = [sys.executable, "-c", "import threading; threading.Event().wait()"]
"""

# Each parent: start a child as Duet does, report the child's pid, wait to be killed.
PARENTS = {
    "popen-without": "report(subprocess.Popen(SLEEPER).pid)",
    "popen-with": "report(subprocess.Popen(SLEEPER, preexec_fn=die_with_parent()).pid)",
    "vllm-launcher": """
from serving.vllm_replica import ReplicaSpec, start_process
spec = ReplicaSpec(Path("/m"), "x", port=free_port())
report(start_process(spec, SLEEPER, dict(os.environ), tmp / "replica.log").pid)
""",
    "sim-process": """
from serving.sim.server.testing import SimProcess
sim = SimProcess("fast-test").start()
report(sim.process.pid)
""",
    "supervisor-restart": """
from serving.supervisor import Backoff, ReplicaLaunch, ReplicaState, Supervisor
port = free_port()
argv = (sys.executable, "-m", "serving.sim", "--port", str(port), "--profile", "fast-test")
launch = ReplicaLaunch("sim", argv, dict(os.environ), f"http://127.0.0.1:{port}", tmp / "sim.log")
supervisor = Supervisor([launch], backoff=Backoff(initial_s=0.05))
supervisor.start()
first = supervisor.wait_ready(30)["sim"].pid
os.kill(first, signal.SIGKILL)  # the watcher thread restarts it: the thread that spawns it is not main
supervisor.wait_until(lambda s: s["sim"].restarts == 1 and s["sim"].state is ReplicaState.READY, 30)
report(supervisor.statuses()["sim"].pid)
""",
}


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)  # polling interval of a condition wait
    return True


@pytest.fixture
def parent(tmp_path: Path) -> Iterator[Callable[[str], tuple[subprocess.Popen[str], int]]]:
    """Starts a parent by name; returns it and its child's pid. Kills both at the end, whatever happened."""
    started: list[tuple[subprocess.Popen[str], int | None]] = []

    def start(name: str) -> tuple[subprocess.Popen[str], int]:
        code = PRELUDE + textwrap.dedent(PARENTS[name])
        process = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                                   cwd=Path(__file__).resolve().parents[2])
        started.append((process, None))
        line = read_line(process, REPORT_WITHIN_S)
        child = int(json.loads(line)["child"])
        started[-1] = (process, child)
        return process, child

    yield start
    for process, child in started:
        if process.poll() is None:
            process.kill()
            process.wait()
        if child is not None and alive(child):
            os.kill(child, signal.SIGKILL)


def read_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The parent's report, or a failure naming how it ended."""
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            raise AssertionError(f"the parent reported no child within {timeout_s} s")
    line = process.stdout.readline()
    assert line, f"the parent exited with {process.wait()} before reporting its child"
    return line


def kill_parent(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.mark.parametrize("name", ["popen-with", "vllm-launcher", "sim-process", "supervisor-restart"])
def test_a_replica_dies_when_its_parent_is_killed(parent, name: str) -> None:  # type: ignore[no-untyped-def]
    process, child = parent(name)
    assert alive(child)
    kill_parent(process)
    assert wait_for(lambda: not alive(child), GONE_WITHIN_S), f"{name}: child {child} outlived its parent"


def test_without_it_a_child_outlives_its_killed_parent(parent) -> None:  # type: ignore[no-untyped-def]
    process, child = parent("popen-without")
    kill_parent(process)
    assert alive(child)  # nothing else would kill it: the fixture does, after the test
